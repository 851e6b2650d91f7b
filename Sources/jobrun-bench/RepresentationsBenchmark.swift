import ArgumentParser
import CloudServer
import Foundation
import Jobs
import MediaBox

/// `jobrun-bench representations`: album thumbnails (200×200) and blurred placeholders (10×10)
/// of cloudd's photos, made by `generate-representations`' generator into a MediaBox, against
/// `vipsthumbnail` over the same files (one process per core, each over its share, once per
/// size). The product runs in a child process per pass, so its peak RSS is its own: without
/// syncs as vipsthumbnail writes (the compared row), and as the job stores them (synced).
struct RepresentationsBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "representations",
        abstract: "Photo representations per second vs vipsthumbnail over the same JPEGs; peak RSS as the photo count grows.")
    @Option(help: "Photos (the RSS check also runs a quarter of them).") var photos = 1000
    @Option(help: "Photos made at once (default: the cores).") var concurrency = ProcessInfo.processInfo.activeProcessorCount
    @Option(help: "Scratch directory (removed afterwards).") var workDir = NSTemporaryDirectory() + "jobrun-bench-representations"

    func run() throws {
        defer { WorkDirectory.remove(workDir) }
        try RepresentationsBenchmark(photos: photos, concurrency: max(1, concurrency), workDir: workDir).run()
    }
}

/// One product pass in a process of its own: `representations-pass <photos dir> <media dir>
/// <count> <concurrency> <synced>` prints `seconds made rssMiB` and the pass's I/O counters.
struct RepresentationsPassCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "representations-pass", abstract: "Internal: the product side of `representations`.", shouldDisplay: false)
    @Argument var photosDir: String
    @Argument var mediaDir: String
    @Argument var count: Int
    @Argument var concurrency: Int
    /// The job's durability (`completionSync: .group`: data and names synced before the rows),
    /// or none, as vipsthumbnail writes.
    @Argument var synced: Bool

    func run() throws {
        let (photosDir, mediaDir, count, concurrency, synced) = (photosDir, mediaDir, count, concurrency, synced)
        let outcome = BlockingResult()
        Task {
            do {
                try await Self.pass(photosDir: photosDir, mediaDir: mediaDir, count: count, concurrency: concurrency, synced: synced)
                outcome.set(nil)
            } catch {
                outcome.set("\(error)")
            }
        }
        if let failure = outcome.wait() { throw BenchError("representations-pass failed: \(failure)") }
    }

    static func pass(photosDir: String, mediaDir: String, count: Int, concurrency: Int, synced: Bool) async throws {
        let box = try MediaBox(basePath: mediaDir, options: MediaBox.Options(completionSync: synced ? .group : .none))
        let ids = (0..<count).map { MediaResourceId("bench-photo-\($0)") }
        // Stored untimed, as prefetch would have left them.
        for (i, id) in ids.enumerated() {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: photosDir + "/\(i).jpg"))
            try box.store(bytes, id: id, info: MediaResourceStorageInfo(contentType: .photo))
        }
        let generator = VipsRepresentationGenerator()
        let policy = [
            PhotoRepresentation(kind: .thumbnail, box: 200, keepDuration: .general),
            PhotoRepresentation(kind: .placeholder, box: 10, keepDuration: .general),
        ]
        let log = JobLogger(sink: try LogSink(configuration: .init(directory: nil, process: "jobrun-bench", console: .human)))
        let photos = ids.map { (id: $0, info: MediaResourceStorageInfo(contentType: .photo)) }
        let start = ProcessIO.now()
        var outcome = (generated: 0, failedPhotos: 0)
        // As a `generate-representations` run makes them: the same workers and group commit.
        let seconds = try await measureAsync {
            outcome = try await GenerateRepresentationsJob.generate(
                photos, policy: policy, box: box, generator: generator, concurrency: concurrency, log: log)
        }
        guard outcome.failedPhotos == 0 else { throw BenchError("\(outcome.failedPhotos) photos failed") }
        let made = try box.stats().byTier[.general].map { $0.count - Int64(count) } ?? 0
        print("\(seconds) \(made) \(peakRSSMiB()) \(ProcessIO.now().since(start).fields)")
    }
}

struct RepresentationsBenchmark {
    var photos: Int
    var concurrency: Int
    var workDir: String

    /// Photo sizes as cloudd serves them ("x" and "y"), alternating.
    static let sizes = [(800, 600), (1280, 960)]

    func run() throws {
        let photosDir = workDir + "/photos"
        try FileManager.default.createDirectory(atPath: photosDir, withIntermediateDirectories: true)
        var bytes = 0
        let written = try measure {
            for i in 0..<photos {
                let (w, h) = Self.sizes[i % Self.sizes.count]
                let jpeg = ClouddPhotos.jpeg(seed: 42, fileId: Int64(i + 1), width: w, height: h)
                bytes += jpeg.count
                try jpeg.write(to: URL(fileURLWithPath: photosDir + "/\(i).jpg"))
            }
        }
        print("set: \(photos) JPEGs (800×600 and 1280×960, \(fmt(Double(bytes) / 1e6, 1)) MB), written in \(fmt(written, 1)) s")
        var table = BenchTable(
            title: "Thumbnail 200×200 + placeholder 10×10 of \(photos) photos, \(concurrency) at a time",
            columns: ["tool", "what it does per photo", "photos", "seconds", "CPU (s)", "representations/s", "written", "peak RSS (MiB)"])
        let product = "1 decode (shrink-on-load to 200), placeholder shrunk from the thumbnail and blurred, 2 files; rows and syncs per batch of photos"
        let quarter = max(1, photos / 4)
        let small = try productPass(photosDir: photosDir, count: quarter, tag: "quarter", synced: false)
        table.add(productRow("jobrun, no sync", product, quarter, small))
        // The product and vipsthumbnail take turns, twice each, and the faster pass of each
        // counts: on cores shared with other work, one pass alone measures the neighbours' load.
        // Who goes first alternates, so neither side always runs in the other's wake (its dirty
        // pages, or the inodes a previous run deleted, which ext4 without a journal skips over
        // for a minute or more when it allocates new ones).
        var full: Pass?
        var peer: (seconds: Double, rss: Double, cpu: Double)?
        for round in 1...2 {
            func productTurn() throws {
                let pass = try productPass(photosDir: photosDir, count: photos, tag: "full-\(round)", synced: false)
                table.add(productRow("jobrun, no sync (round \(round))", product, photos, pass))
                if pass.seconds < full?.seconds ?? .infinity { full = pass }
            }
            func peerTurn() throws {
                let tool = try vipsthumbnail(photosDir: photosDir, round: round)
                table.add([
                    "vipsthumbnail, \(concurrency) processes (round \(round))",
                    "2 decodes (shrink-on-load to 200, then to 10), 2 files, no sync, no index, no blur", "\(photos)",
                    fmt(tool.seconds), fmt(tool.cpu, 2), fmt(Double(2 * photos) / tool.seconds, 1), "-", fmt(tool.rss, 1),
                ])
                if tool.seconds < peer?.seconds ?? .infinity { peer = tool }
            }
            if round == 1 {
                try productTurn()
                try peerTurn()
            } else {
                try peerTurn()
                try productTurn()
            }
        }
        guard let full, let peer else { return }
        let durable = try productPass(photosDir: photosDir, count: photos, tag: "durable", synced: true)
        table.add(productRow("jobrun as the job stores (synced)", product + ", data and names synced before the rows", photos, durable))
        table.print()
        for pass in [full, durable] where pass.made != Int64(2 * photos) {
            throw BenchError("made \(pass.made) representations of \(photos) photos, expected \(2 * photos)")
        }
        let ratio = (Double(full.made) / full.seconds) / (Double(2 * photos) / peer.seconds)
        let durableRatio = (Double(durable.made) / durable.seconds) / (Double(2 * photos) / peer.seconds)
        print(
            "representations/s, the faster pass of each: \(fmt(ratio))× vipsthumbnail's, both writing without sync (target ≥ 1.0×); \(fmt(durableRatio))× as the job stores them, synced; "
                + "peak RSS \(fmt(small.rss, 1)) MiB at \(quarter) photos, \(fmt(full.rss, 1)) MiB at \(photos)")
        BenchRatios.record(
            "representations", "representations/s, \(photos) photos, no sync on either side", product: fmt(Double(full.made) / full.seconds, 1) + "/s",
            peer: fmt(Double(2 * photos) / peer.seconds, 1) + "/s (vipsthumbnail)", ratio: ratio, target: 1.0)
        BenchRatios.record(
            "representations", "representations/s, \(photos) photos, synced as the job stores them",
            product: fmt(Double(durable.made) / durable.seconds, 1) + "/s",
            peer: fmt(Double(2 * photos) / peer.seconds, 1) + "/s (vipsthumbnail, no sync)", ratio: durableRatio, target: nil)
        BenchRatios.record(
            "representations", "peak RSS at \(quarter) ÷ at \(photos) photos (flat = 1)", product: fmt(full.rss, 1) + " MiB",
            peer: fmt(small.rss, 1) + " MiB", ratio: small.rss / full.rss, target: nil)
    }

    struct Pass { var seconds: Double; var made: Int64; var rss: Double; var io: ProcessIO }

    func productRow(_ tool: String, _ work: String, _ count: Int, _ pass: Pass) -> [String] {
        [
            tool, work, "\(count)", fmt(pass.seconds), fmt(pass.io.cpuSeconds, 2), fmt(Double(pass.made) / pass.seconds, 1), pass.io.writesCell,
            fmt(pass.rss, 1),
        ]
    }

    func productPass(photosDir: String, count: Int, tag: String, synced: Bool) throws -> Pass {
        let child = Process()
        child.executableURL = thisExecutable
        child.arguments = ["representations-pass", photosDir, workDir + "/media-\(tag)", "\(count)", "\(concurrency)", "\(synced)"]
        let out = Pipe()
        child.standardOutput = out
        try child.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        let fields = text.split(whereSeparator: \.isWhitespace)
        guard child.terminationStatus == 0, fields.count == 3 + ProcessIO.fieldCount, let s = Double(fields[0]), let m = Int64(fields[1]),
            let r = Double(fields[2]), let io = ProcessIO.parse(Array(fields.dropFirst(3)))
        else {
            throw BenchError("representations-pass failed: \(text)")
        }
        return Pass(seconds: s, made: m, rss: r, io: io)
    }

    /// `vipsthumbnail` over the same files: for each size, `concurrency` processes at once, each
    /// over its share of the files. Its placeholder pass does not blur (vipsthumbnail cannot),
    /// so the peer does slightly less work than the product. Each round writes into a folder of
    /// its own, as each product pass does into a MediaBox of its own: every output is a new file
    /// (a second round into the same folder would only overwrite, and create no inode). Its peak RSS is the largest of its
    /// processes' (GNU time's `%M`); its CPU is its processes' user + system time.
    func vipsthumbnail(photosDir: String, round: Int) throws -> (seconds: Double, rss: Double, cpu: Double) {
        let files = (0..<photos).map { photosDir + "/\($0).jpg" }
        let outDir = workDir + "/vipsthumbnail-\(round)"
        try FileManager.default.createDirectory(atPath: outDir, withIntermediateDirectories: true)
        let rss = PeerRSS(directory: workDir)
        rss.reset("vipsthumbnail")
        let cpuBefore = rusageCPUSeconds(RUSAGE_CHILDREN)
        let seconds = try measure {
            for (size, quality) in [(200, 80), (10, 40)] {
                var running: [Process] = []
                for share in 0..<concurrency {
                    let mine = stride(from: share, to: files.count, by: concurrency).map { files[$0] }
                    let argv = rss.argv(
                        "vipsthumbnail", ["/usr/bin/vipsthumbnail", "-s", "\(size)x\(size)", "-o", outDir + "/%s-\(size).jpg[Q=\(quality),strip]"] + mine)
                    let p = Process()
                    p.executableURL = URL(fileURLWithPath: argv[0])
                    p.arguments = Array(argv.dropFirst())
                    try p.run()
                    running.append(p)
                }
                for p in running {
                    p.waitUntilExit()
                    guard p.terminationStatus == 0 else { throw BenchError("vipsthumbnail exited \(p.terminationStatus)") }
                }
            }
        }
        return (seconds, rss.peakMiB("vipsthumbnail"), rusageCPUSeconds(RUSAGE_CHILDREN) - cpuBefore)
    }
}
