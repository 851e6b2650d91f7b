import CloudCrypto
import Foundation

/// Reading stored upload parts (`<directory>/0`, `1`, …) without Foundation's `Data` copies.
enum PartFiles {
    static func path(_ directory: String, _ part: Int) -> String { directory + "/\(part)" }

    /// Reads a whole (part) file into `buffer`; its byte count. Larger than `buffer` is an error.
    static func readWhole(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: path]) }
        defer { close(fd) }
        var got = 0
        while true {
            let room = buffer.count - got
            // One byte past the buffer's end is probed through a scratch byte to detect a too-large file.
            var scratch: UInt8 = 0
            let n = room > 0 ? systemRead(fd, buffer.baseAddress! + got, room) : systemRead(fd, &scratch, 1)
            if n < 0 {
                if errno == EINTR { continue }
                throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: path])
            }
            if n == 0 { return got }
            guard room > 0 else { throw CocoaError(.fileReadTooLarge, userInfo: [NSFilePathErrorKey: path]) }
            got += n
        }
    }

    /// Writes all of `bytes` to `fd` at `offset`.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) throws {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw CocoaError(.fileWriteUnknown)
            }
            done += n
        }
    }

    /// Lowercase hex MD5 of the parts in order, read on a dispatch queue (off the cooperative
    /// pool); only computed when `sendMedia` carries an `md5`.
    static func md5(directory: String, parts: Int, maxPartSize: Int) async throws -> String {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<String, Error>) in
            DispatchQueue.global().async {
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maxPartSize, alignment: 16)
                defer { buffer.deallocate() }
                var md5 = MD5Stream()
                do {
                    for p in 0..<parts {
                        let n = try readWhole(path(directory, p), into: buffer)
                        md5.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                    }
                } catch {
                    c.resume(throwing: error)
                    return
                }
                c.resume(returning: md5.finalize().hexString)
            }
        }
    }
}

// File scope, so the name resolves to the C function.
private func systemRead(_ fd: Int32, _ to: UnsafeMutableRawPointer, _ count: Int) -> Int { read(fd, to, count) }
