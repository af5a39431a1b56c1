/// Sees a download's body bytes as they are written to the file, so a caller can hash (or
/// otherwise digest) them on the fly instead of reading the whole file back afterwards.
///
/// Called on the transfer's pool thread, in order, never concurrently for one transfer.
/// An observer passed to several downloads at once must tell them apart itself.
public protocol DownloadBodyObserver: AnyObject, Sendable {
    /// A 200 or 206 body starts; its bytes land at `offset` in the file. After a 200 (a server
    /// that ignored `Range`) this is 0 and whatever the observer saw before no longer counts.
    func bodyBegins(atOffset offset: Int64)
    /// These bytes were just written to the file, right after the ones before.
    func bodyWritten(_ bytes: UnsafeRawBufferPointer)
    /// The whole body arrived and is in the file, still open as `descriptor`. Called on the
    /// transfer thread, so an observer can fsync here instead of blocking an async caller's
    /// thread on the disk (and several transfers' fsyncs share one journal commit).
    func bodyEnded(fileDescriptor descriptor: Int32)
    /// The whole body arrived from the network (curl finished without error); some of it may
    /// still be on its way into the file, which `bodyEnded` then follows. Called on the transfer
    /// thread, so a caller can let the next transfer use the network while this one's last
    /// bytes go to the disk.
    func bodyReceived()
}

extension DownloadBodyObserver {
    public func bodyEnded(fileDescriptor descriptor: Int32) {}
    public func bodyReceived() {}
}
