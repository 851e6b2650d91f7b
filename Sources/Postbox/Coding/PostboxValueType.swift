/// The type tag of each encoded field: part of the on-disk format (docs/storage-format.md).
///
/// Tags 0–63 have fixed payload layouts. Tags 64 and above are reserved for future types and
/// must be followed by an Int32 payload length, so that older readers can skip them.
enum PostboxValueType: UInt8 {
    case int32 = 0
    case int64 = 1
    case bool = 2
    case double = 3
    case string = 4
    case object = 5
    case int32Array = 6
    case int64Array = 7
    case objectArray = 8
    case bytes = 9
    case nil_ = 10
    case stringArray = 11
    case bytesArray = 12

    static let firstExtensionTag: UInt8 = 64
}
