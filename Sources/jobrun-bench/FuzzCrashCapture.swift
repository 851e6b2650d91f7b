import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Saves the input being decoded when the process crashes or traps, so a fuzzing finding that
/// kills the fuzzer is not lost. The input is copied into a preallocated buffer before each
/// decode; the signal handler only calls async-signal-safe functions (open, write, close).
enum FuzzCrashCapture {
    static let capacity = 1 << 20
    nonisolated(unsafe) static var buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
    nonisolated(unsafe) static var length = 0
    nonisolated(unsafe) static var path: UnsafeMutablePointer<CChar>?

    static func install(path: String) {
        self.path = strdup(path)
        for signal in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE] {
            Glibc.signal(signal) { received in
                if let path = FuzzCrashCapture.path {
                    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
                    if fd >= 0 {
                        _ = write(fd, FuzzCrashCapture.buffer, FuzzCrashCapture.length)
                        close(fd)
                    }
                }
                Glibc.signal(received, SIG_DFL)
                raise(received)
            }
        }
    }

    /// Records `input` as the one being decoded.
    static func current(_ input: String) {
        var count = 0
        for byte in input.utf8 {
            guard count < capacity else { break }
            buffer[count] = byte
            count += 1
        }
        length = count
    }
}
