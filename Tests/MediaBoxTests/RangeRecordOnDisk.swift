import CLinux
import Foundation
import XCTest

@testable import MediaBox

/// The raw range record of a file (`PartialRangeRecord`'s extended attribute), read and written
/// by path as another program would.
enum RangeRecordOnDisk {
    /// The attribute's value, or nil when the file has none.
    static func value(atPath path: String) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 8192)
        let n = getxattr(path, PartialRangeRecord.attributeName, &buffer, buffer.count)
        return n < 0 ? nil : Array(buffer.prefix(n))
    }

    /// Sets the attribute's value (a foreign or damaged record, in tests).
    static func set(_ value: [UInt8], atPath path: String) throws {
        let status = value.withUnsafeBytes { setxattr(path, PartialRangeRecord.attributeName, $0.baseAddress, $0.count, 0) }
        if status != 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }
}
