/// Ids the origin hands out end up in file names, URLs and SQL parameters; anything but a plain
/// token (`[A-Za-z0-9._-]{1,128}`, docs/origin.md) is refused before it gets that far.
public enum OriginID {
    @inlinable
    public static func isValid(_ id: String) -> Bool {
        isValid(utf8: id.utf8)
    }

    /// The same rule over UTF-8 bytes, such as one component of a path, without making a `String`.
    /// Inlinable: specialized where it is called, it is a loop over bytes; called through the
    /// generic entry point, each byte went through the collection's witness table (1.3 % of the
    /// downloader's CPU in a 1 000-file station sync).
    @inlinable
    public static func isValid<Bytes: Collection<UInt8>>(utf8 bytes: Bytes) -> Bool {
        guard (1...128).contains(bytes.count), !bytes.elementsEqual(".".utf8), !bytes.elementsEqual("..".utf8) else {
            return false
        }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
    }
}
