import ArgumentParser
import Foundation
import Jobs
import Postbox

#if canImport(Glibc)
    import Glibc
#endif

struct EncryptBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encrypt",
        abstract: "`jobrun encrypt` of plaintext roots of growing size: throughput, and peak RSS (which must not grow with the store).")
    @Option(help: "Messages in the largest store; the smaller ones hold a quarter and a half of it.") var messages = 2_000_000
    @Option(help: "Peers (messages are spread evenly).") var peers = 100
    @Option(help: "Scratch directory (removed afterwards).") var workDir = NSTemporaryDirectory() + "jobrun-bench-encrypt"

    func run() throws {
        defer { WorkDirectory.remove(workDir) }
        try EncryptBenchmark(messages: messages, peers: peers, workDir: workDir).run()
    }
}

/// One conversion in a process of its own, so that its peak RSS is the conversion's alone:
/// `encrypt-pass <root>` prints seconds, bytes converted and peak RSS (MiB).
struct EncryptPassCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "encrypt-pass", abstract: "Internal: one conversion of `encrypt`.", shouldDisplay: false)
    @Argument var root: String

    func run() throws {
        var report: RootKeyConversion.Report?
        let seconds = try measure { report = try RootKeyConversion.run(.encrypt, root: DataRoot(path: root), environment: [:]) }
        guard let report, report.converted == 1 else { throw BenchError("encrypt-pass: expected one store converted") }
        print("\(seconds) \(report.bytes) \(peakRSSMiB())")
    }
}

/// `jobrun encrypt` (`RootKeyConversion`) of a root whose one account holds a plaintext Postbox
/// of a quarter, a half and all of `messages` messages, each conversion in a fresh process: its
/// time, throughput and peak RSS. The conversion streams rows through two small page caches, so
/// its peak RSS should stay the same whatever the store's size.
struct EncryptBenchmark {
    var messages: Int
    var peers: Int
    var workDir: String

    /// How much the peak RSS may grow from the smallest store to the largest, at most.
    static let flatRSSFactor = 1.25

    func run() throws {
        try FileManager.default.createDirectory(atPath: workDir, withIntermediateDirectories: true)
        var table = BenchTable(
            title: "jobrun encrypt of a plaintext root (one Postbox of N messages; each conversion in its own process)",
            columns: ["messages", "store (MB)", "seconds", "MB/s", "messages/s", "peak RSS (MiB)"])
        var rss: [Double] = []
        for size in [messages / 4, messages / 2, messages] {
            let root = workDir + "/root-\(size)"
            let store = try build(root: root, messages: size)
            let pass = try convert(root: root)
            guard try SqliteValueBox.isEncrypted(path: store) == true else { throw BenchError("\(store) is not encrypted after the conversion") }
            rss.append(pass.rss)
            let megabytes = Double(pass.bytes) / 1e6
            table.add([
                "\(size)", fmt(megabytes, 1), fmt(pass.seconds, 2), fmt(megabytes / pass.seconds, 1), fmt(Double(size) / pass.seconds, 0), fmt(pass.rss, 1),
            ])
            // A root is a few large files: removing it now frees too few inodes to slow any later
            // benchmark's file creation (`WorkDirectory`), and keeps the disk from holding all three.
            try? FileManager.default.removeItem(atPath: root)
        }
        table.print()
        let growth = rss.last! / rss.first!
        BenchRatios.record(
            "encrypt", "peak RSS of \(messages) messages over \(messages / 4)", product: fmt(rss.last!, 1) + " MiB",
            peer: fmt(rss.first!, 1) + " MiB",
            ratio: 1 / growth, target: 1 / Self.flatRSSFactor)
        print(
            "peak RSS from \(messages / 4) to \(messages) messages: \(fmt(rss.first!, 1)) → \(fmt(rss.last!, 1)) MiB (×\(fmt(growth))); "
                + (growth <= Self.flatRSSFactor ? "flat (≤ ×\(fmt(Self.flatRSSFactor))) ok" : "grows (> ×\(fmt(Self.flatRSSFactor))) MISSED"))
    }

    /// A plaintext root with one account whose Postbox holds `messages` messages; its path.
    private func build(root path: String, messages: Int) throws -> String {
        let root = DataRoot(path: path)
        try root.createDirectories(accounts: [1])
        let store = root.account(1).postboxFile.path
        let postbox = try Postbox(path: store)
        let perTransaction = 50_000
        var next = 0
        while next < messages {
            let end = min(messages, next + perTransaction)
            try postbox.transactionSync { tx in
                let table = try tx.messages
                for i in next..<end {
                    let (peer, id) = (Int64(i % peers + 1), Int32(i / peers + 1))
                    try table.add([Message(id: MessageId(peerId: PeerId(peer), id: id), timestamp: 1_600_000_000 + id, text: benchText(i))])
                }
            }
            next = end
        }
        return store
    }

    private struct Pass { var seconds: Double; var bytes: Int64; var rss: Double }

    private func convert(root: String) throws -> Pass {
        let child = Process()
        child.executableURL = thisExecutable
        child.arguments = ["encrypt-pass", root]
        let out = Pipe()
        child.standardOutput = out
        try child.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        guard child.terminationStatus == 0 else { throw BenchError("encrypt-pass failed (exit \(child.terminationStatus))") }
        let fields = text.split(whereSeparator: \.isWhitespace)
        guard fields.count == 3, let s = Double(fields[0]), let b = Int64(fields[1]), let m = Double(fields[2]) else {
            throw BenchError("encrypt-pass: unexpected output")
        }
        return Pass(seconds: s, bytes: b, rss: m)
    }
}
