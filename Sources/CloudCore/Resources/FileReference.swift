import Foundation

/// A file reference: the opaque token the cloud issues for a parent entity and wants with every
/// file request (`fileReference` in `upload.getFile`). It is a secret and it expires.
///
/// `description`, `debugDescription` and the mirror never show the bytes, so a reference that
/// ends up in string interpolation, a log or an error message gives away only its length.
public struct FileReference: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The raw token, for the wire only.
    public let bytes: Data

    public init(_ bytes: Data) { self.bytes = bytes }

    /// No reference (secret files and plain URLs need none).
    public static let none = FileReference(Data())

    public var isEmpty: Bool { bytes.isEmpty }

    public var description: String { "FileReference([redacted \(bytes.count) bytes])" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["bytes": "[redacted \(bytes.count) bytes]"], displayStyle: .struct) }
}
