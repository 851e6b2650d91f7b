import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP port no one listens on at the moment (the kernel's choice for 127.0.0.1:0): a server
/// started right after on any local address almost always gets it.
public enum FreePort {
    public static func pick() throws -> Int {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard s >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        defer { close(s) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
