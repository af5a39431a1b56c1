import Wire

/// The quality an offline asks the origin for: the request's own when it names one, else the
/// policy's for the product's type (`offlineAudioQuality` for a track, `offlineVideoQuality` for
/// a video). A request that names neither a quality nor a type is asked at the audio quality
/// first; when the origin's answer says the product is a video, it is asked again at the video
/// quality, so `offline.add vid-1` alone offlines the video at the video setting.
struct QualityChoice: Sendable, Equatable {
    var requested: String?
    var productType: String?
    var policy: DownloadPolicy

    init(requested: String?, productType: String?, policy: DownloadPolicy) {
        self.requested = requested
        self.productType = productType
        self.policy = policy
    }

    /// What the origin is asked first.
    var first: String { requested ?? policy.offlineQuality(productType: productType) }

    /// The quality to ask again at after `info`, the answer to `first`; nil when `first` was right.
    func again(after info: JSONValue) -> String? {
        guard requested == nil, productType == nil, policy.offlineVideoQuality != policy.offlineAudioQuality,
            info["productType"]?.stringValue?.uppercased() == "VIDEO"
        else { return nil }
        return policy.offlineVideoQuality
    }
}
