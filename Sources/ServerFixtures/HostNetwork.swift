import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Hosts for multi-host tests and benchmarks on one machine. Each host is a network namespace
/// (`ip netns`) with its own `lo` and one `eth0`, the far end of a veth pair whose near end is a
/// port of a bridge in the root namespace. The bridge holds the servers' address (`.1` of a
/// private /24 under 10.231.0.0/16, unique per process) and each host `.10 + i`, so PostgreSQL
/// and `cloudd` listen on the bridge address and every host reaches them over its own link.
///
/// `cut(_:)` takes the host's bridge port down: from then on nothing it sends arrives and
/// nothing sent to it is answered — no reset, no FIN — so its peers see what they would see of a
/// crashed or partitioned machine, and find out only through their own timeouts and TCP
/// keepalives. `heal(_:)` brings the port back up.
///
/// Names carry the owning process's id and a serial number (`jobrun-<pid>-<n>-h<i>`, bridge
/// `jr<pid>n<n>b`, ports `jr<pid>n<n>v<i>`); what a crashed earlier process left behind is removed before anything is
/// created. `tearDown()` (also on deinit and at process exit) removes the namespaces and links.
///
/// Without the privileges to create namespaces (not root, or a container without
/// `CAP_SYS_ADMIN`), the hosts are plain processes on loopback: `isolated` is false,
/// `fallbackReason` says why, and `cut(_:)` throws.
public final class HostNetwork: @unchecked Sendable {
    // @unchecked Sendable: `hosts` and the addresses are immutable; `tornDown` is under `lock`.

    /// One host: where its processes run and the address its peers see.
    public struct Host: Sendable, CustomStringConvertible {
        /// 0-based.
        public let index: Int
        /// `host-1`, `host-2`, … (for messages).
        public let name: String
        /// The network namespace, or nil for a plain process on loopback.
        public let namespace: String?
        /// The host's own address on the bridge (127.0.0.1 without namespaces).
        public let address: String
        /// The bridge port of its link, in the root namespace.
        let bridgePort: String?

        public var description: String { namespace.map { "\(name) (\($0), \(address))" } ?? "\(name) (loopback)" }

        /// The command line that runs `executable arguments` on this host: inside its namespace
        /// through `ip netns exec` (which execs the program in place, so the pid is the
        /// program's own and a signal reaches it directly).
        public func command(_ executable: String, _ arguments: [String]) -> (executable: String, arguments: [String]) {
            guard let namespace, let ip = HostNetwork.ipCommand else { return (executable, arguments) }
            return (ip, ["netns", "exec", namespace, executable] + arguments)
        }
    }

    public let hosts: [Host]
    /// Whether each host has a network namespace of its own (and can be cut off).
    public let isolated: Bool
    /// Why the hosts are plain processes on loopback, when they are.
    public let fallbackReason: String?
    /// The address servers in the root namespace listen on for the hosts.
    public let serverAddress: String
    /// The hosts' subnet in CIDR form (for pg_hba), `127.0.0.1/32` without namespaces.
    public let subnet: String

    private let bridge: String?
    private let lock = NSLock()
    private var tornDown = false

    static let ipCommand = SystemCommand.find("ip")
    static let namespacePattern = #"^jobrun-(\d+)-\d+-h\d+$"#
    static let bridgePattern = #"^jr(\d+)n\d+b$"#

    /// Creates `count` hosts: namespaces when this process may create them, plain processes
    /// otherwise. `iproute2` missing while root is an error (scripts/install-deps.sh installs it).
    public convenience init(hosts count: Int) throws {
        precondition(count > 0 && count < 200)
        let pid = getpid()
        guard getuid() == 0 else {
            self.init(loopback: count, reason: "network namespaces need root (running as uid \(getuid())): hosts are plain processes on loopback")
            return
        }
        guard let ip = Self.ipCommand else {
            throw SystemCommand.Failure(description: "the `ip` command (iproute2) is not installed: run scripts/install-deps.sh")
        }
        Self.removeStale()
        let tag = "\(pid)n\(liveNetworks.nextSerial())"
        let bridge = "jr\(tag)b"
        // Probe: the kernel or the container may refuse namespaces or bridges even to root.
        let probe = try SystemCommand.status([ip, "link", "add", bridge, "type", "bridge"])
        guard probe.status == 0 else {
            self.init(loopback: count, reason: "cannot create a bridge (\(probe.stderr)): hosts are plain processes on loopback")
            return
        }
        let octet = Self.freeSubnetOctet(start: Int(pid))
        let prefix = "10.231.\(octet)"
        var made: [Host] = []
        do {
            try SystemCommand.run([ip, "addr", "add", "\(prefix).1/24", "dev", bridge])
            try SystemCommand.run([ip, "link", "set", bridge, "up"])
            for i in 0..<count {
                let namespace = "jobrun-\(tag.replacingOccurrences(of: "n", with: "-"))-h\(i)"
                let port = "jr\(tag)v\(i)"
                let far = "jr\(tag)p\(i)"
                let address = "\(prefix).\(10 + i)"
                try SystemCommand.run([ip, "netns", "add", namespace])
                made.append(Host(index: i, name: "host-\(i + 1)", namespace: namespace, address: address, bridgePort: port))
                try SystemCommand.run([ip, "link", "add", port, "type", "veth", "peer", "name", far])
                try SystemCommand.run([ip, "link", "set", port, "master", bridge])
                try SystemCommand.run([ip, "link", "set", port, "up"])
                try SystemCommand.run([ip, "link", "set", far, "netns", namespace])
                try SystemCommand.run([ip, "-n", namespace, "link", "set", far, "name", "eth0"])
                try SystemCommand.run([ip, "-n", namespace, "addr", "add", "\(address)/24", "dev", "eth0"])
                try SystemCommand.run([ip, "-n", namespace, "link", "set", "eth0", "up"])
                try SystemCommand.run([ip, "-n", namespace, "link", "set", "lo", "up"])
            }
        } catch {
            Self.remove(namespaces: made.compactMap(\.namespace), ports: made.compactMap(\.bridgePort), bridge: bridge)
            throw error
        }
        self.init(hosts: made, isolated: true, fallbackReason: nil, serverAddress: "\(prefix).1", subnet: "\(prefix).0/24", bridge: bridge)
        liveNetworks.add(self)
    }

    private convenience init(loopback count: Int, reason: String) {
        let hosts = (0..<count).map { Host(index: $0, name: "host-\($0 + 1)", namespace: nil, address: "127.0.0.1", bridgePort: nil) }
        self.init(hosts: hosts, isolated: false, fallbackReason: reason, serverAddress: "127.0.0.1", subnet: "127.0.0.1/32", bridge: nil)
    }

    private init(hosts: [Host], isolated: Bool, fallbackReason: String?, serverAddress: String, subnet: String, bridge: String?) {
        self.hosts = hosts
        self.isolated = isolated
        self.fallbackReason = fallbackReason
        self.serverAddress = serverAddress
        self.subnet = subnet
        self.bridge = bridge
    }

    deinit { tearDown() }

    /// Cuts `host` off: its bridge port goes down, so its packets and its peers' packets to it
    /// are dropped in silence.
    public func cut(_ host: Host) throws {
        try setLink(host, up: false)
    }

    /// Reconnects a cut host.
    public func heal(_ host: Host) throws {
        try setLink(host, up: true)
    }

    private func setLink(_ host: Host, up: Bool) throws {
        guard let port = host.bridgePort, let ip = Self.ipCommand else {
            throw SystemCommand.Failure(description: "\(host.name) has no link of its own to cut: \(fallbackReason ?? "no namespaces")")
        }
        try SystemCommand.run([ip, "link", "set", port, up ? "up" : "down"])
    }

    /// Removes the namespaces and links (idempotent). Processes still running in a namespace
    /// keep it alive until they exit; the caller stops its own processes first.
    public func tearDown() {
        lock.lock()
        let done = tornDown
        tornDown = true
        lock.unlock()
        guard !done, isolated else { return }
        Self.remove(namespaces: hosts.compactMap(\.namespace), ports: hosts.compactMap(\.bridgePort), bridge: bridge)
    }

    private static func remove(namespaces: [String], ports: [String] = [], bridge: String?) {
        guard let ip = ipCommand else { return }
        // Deleting a veth end deletes the pair at once; a namespace's own links go when the
        // kernel gets round to cleaning it up, so the ports are deleted first.
        for port in ports { _ = try? SystemCommand.status([ip, "link", "delete", port]) }
        for namespace in namespaces { _ = try? SystemCommand.status([ip, "netns", "delete", namespace]) }
        if let bridge { _ = try? SystemCommand.status([ip, "link", "delete", bridge]) }
    }

    /// Removes the namespaces and bridges of processes that no longer exist.
    public static func removeStale() {
        guard let ip = ipCommand else { return }
        func dead(_ name: String, _ pattern: String) -> Bool {
            guard let regex = try? NSRegularExpression(pattern: pattern),
                let match = regex.firstMatch(in: name, range: NSRange(name.startIndex..., in: name)),
                let digits = Range(match.range(at: 1), in: name), let pid = Int32(name[digits])
            else { return false }
            return pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH
        }
        let namespaces = ((try? SystemCommand.run([ip, "netns", "list"])) ?? "").split(separator: "\n").compactMap {
            $0.split(separator: " ").first.map(String.init)
        }
        for namespace in namespaces where dead(namespace, namespacePattern) {
            _ = try? SystemCommand.status([ip, "netns", "delete", namespace])
        }
        let bridges = ((try? SystemCommand.run([ip, "-o", "link", "show", "type", "bridge"])) ?? "").split(separator: "\n").compactMap { line in
            line.split(separator: ":").dropFirst().first.map { $0.trimmingCharacters(in: .whitespaces) }
        }
        for bridge in bridges where dead(bridge, bridgePattern) {
            _ = try? SystemCommand.status([ip, "link", "delete", bridge])
        }
    }

    /// A third octet for 10.231.X.0/24 that no interface of the root namespace uses yet,
    /// starting from one derived from `start` (the pid) so parallel processes rarely collide.
    private static func freeSubnetOctet(start: Int) -> Int {
        let used = ((ipCommand.flatMap { try? SystemCommand.run([$0, "-o", "-4", "addr", "show"]) }) ?? "")
        for step in 0..<250 {
            let octet = 1 + (start + step) % 250
            if !used.contains("10.231.\(octet).") { return octet }
        }
        return 1 + start % 250
    }

}

/// Namespaces outlive the process that made them: the networks of this process not yet torn
/// down are removed by an `atexit` handler, even when a test fails without releasing its own.
private let liveNetworks = LiveNetworks()

private final class LiveNetworks: @unchecked Sendable {
    // @unchecked Sendable: `networks` is only touched under `lock`.
    private let lock = NSLock()
    private var networks: [Weak] = []
    private var registered = false
    private var serial = 0

    /// A number for the next network's names, unique in this process.
    func nextSerial() -> Int {
        lock.lock()
        defer { lock.unlock() }
        serial += 1
        return serial
    }

    private struct Weak {
        weak var network: HostNetwork?
    }

    func add(_ network: HostNetwork) {
        lock.lock()
        defer { lock.unlock() }
        networks.append(Weak(network: network))
        if !registered {
            registered = true
            atexit { liveNetworks.tearDownAll() }
        }
    }

    func tearDownAll() {
        lock.lock()
        let all = networks.compactMap(\.network)
        networks = []
        lock.unlock()
        for network in all { network.tearDown() }
    }
}
