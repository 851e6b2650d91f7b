import Foundation
import TestSupport
import XCTest

/// The multi-host harness itself: hosts reach the bridge address and not each other's
/// loopback, a cut host is silent and a healed one reachable again, and namespaces and links
/// are removed at teardown — also those a crashed earlier process left behind.
final class HostNetworkTests: XCTestCase {
    private func namespaces() throws -> [String] {
        try SystemCommand.run([try XCTUnwrap(SystemCommand.find("ip")), "netns", "list"]).split(separator: "\n").compactMap {
            $0.split(separator: " ").first.map(String.init)
        }
    }

    private func links() throws -> String {
        try SystemCommand.run([try XCTUnwrap(SystemCommand.find("ip")), "-o", "link", "show"])
    }

    /// Whether `host` completes a TCP connection to `address:port` within `seconds` (bash's
    /// /dev/tcp). A connection expected to succeed gets a generous bound: on a loaded machine
    /// starting the shell in the namespace alone can take seconds. One expected to fail is
    /// cut short: a dropped SYN never completes, however long it is given.
    private func connects(_ host: HostNetwork.Host, _ address: String, _ port: Int, within seconds: Int = 60) throws -> Bool {
        let command = host.command("/usr/bin/timeout", ["\(seconds)", "/bin/bash", "-c", "exec 3<>/dev/tcp/\(address)/\(port)"])
        return try SystemCommand.status([command.executable] + command.arguments).status == 0
    }

    func testHostsReachTheBridgeUntilCutAndEverythingIsRemovedAtTeardown() throws {
        let network = try HostNetwork(hosts: 2)
        addTeardownBlock { network.tearDown() }
        try XCTSkipUnless(network.isolated, network.fallbackReason ?? "")
        let listener = try LoopbackListener(handler: { _ in })
        defer { listener.stop() }
        // A server on the bridge address, as PostgreSQL and cloudd listen in the tests.
        let cloud = try startCloudd(["--host", network.serverAddress, "--dcs", "1", "--peers", "1"])
        let port = try XCTUnwrap(URL(string: cloud.ready.dcs[0].url)?.port)
        let (a, b) = (network.hosts[0], network.hosts[1])
        XCTAssertNotEqual(a.address, b.address)
        XCTAssertTrue(try connects(a, network.serverAddress, port), "\(a) reaches the bridge address")
        XCTAssertFalse(try connects(a, "127.0.0.1", listener.port, within: 5), "a host's loopback is its own, not the machine's")

        try network.cut(a)
        XCTAssertFalse(try connects(a, network.serverAddress, port, within: 5), "a cut host reaches nothing")
        XCTAssertTrue(try connects(b, network.serverAddress, port), "the other host is not affected")
        try network.heal(a)
        XCTAssertTrue(try connects(a, network.serverAddress, port), "a healed host reaches the bridge again")

        let names = network.hosts.compactMap(\.namespace)
        XCTAssertTrue(Set(names).isSubset(of: Set(try namespaces())))
        network.tearDown()
        XCTAssertTrue(Set(names).isDisjoint(with: Set(try namespaces())), "namespaces removed")
        XCTAssertFalse(try links().contains("jr\(getpid())n"), "bridge and veth pairs removed")
    }

    func testWhatADeadProcessLeftBehindIsRemovedFirst() throws {
        try XCTSkipUnless(getuid() == 0, "network namespaces need root")
        let ip = try XCTUnwrap(SystemCommand.find("ip"), "iproute2 is installed by scripts/install-deps.sh")
        // A pid that exists no more: a child that has exited and been reaped.
        let gone = try ChildProcess("/bin/true", [])
        gone.wait()
        let stale = "jobrun-\(gone.pid)-1-h0"
        let staleBridge = "jr\(gone.pid)n1b"
        guard try SystemCommand.status([ip, "netns", "add", stale]).status == 0 else { throw XCTSkip("namespaces are refused here") }
        try SystemCommand.run([ip, "link", "add", staleBridge, "type", "bridge"])
        let network = try HostNetwork(hosts: 1)
        defer { network.tearDown() }
        XCTAssertFalse(try namespaces().contains(stale), "the dead process's namespace is removed")
        XCTAssertFalse(try links().contains(staleBridge), "the dead process's bridge is removed")
    }
}
