import Foundation

/// Wall-clock seconds taken by `body`.
func measure(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// Wall-clock seconds taken by an async `body`.
func measureAsync(_ body: () async throws -> Void) async rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// Writes back every dirty page (untimed), so one phase's leftovers never land in the next
/// phase's syncs. (Files removed earlier slow the next phase's file creation all the same:
/// see `WorkDirectory`.)
func settleDisk() { sync() }

/// `settleDisk`, then the wall-clock seconds taken by `body`: a timed phase that touches the disk.
func measureSettled(_ body: () async throws -> Void) async rethrows -> Double {
    settleDisk()
    return try await measureAsync(body)
}

/// Appends `line` and a newline to the file at `path`; false if it cannot be opened for writing.
/// How benchmark processes hand results to `jobrun-bench all` (`BenchRatios`, `WorkDirectory`).
@discardableResult
func appendLine(_ line: Data, to path: String) -> Bool {
    guard let handle = FileHandle(forWritingAtPath: path) else { return false }
    handle.seekToEndOfFile()
    handle.write(line + Data([0x0a]))
    handle.closeFile()
    return true
}

/// This executable (symbolic links resolved), however it was started.
let thisExecutable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()

/// The folder holding this executable.
var executableFolder: URL { thisExecutable.deletingLastPathComponent() }

/// The path of `name` (`jobrun`, `cloudd`) built next to this executable.
func siblingExecutable(_ name: String) -> String { executableFolder.appendingPathComponent(name).path }

/// The checkout this binary was built in (it lies under `.build` there): the nearest folder
/// above the executable that holds `Package.swift`, so that the repository's files are found
/// whatever the current directory; nil for a binary copied elsewhere.
func checkoutDirectory() -> String? {
    var folder = executableFolder
    while folder.path != "/" {
        if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) { return folder.path }
        folder = folder.deletingLastPathComponent()
    }
    return nil
}

/// The size of the file at `path` in bytes (0 when there is none).
func fileBytes(_ path: String) -> Int64 { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? 0 }

/// Peak resident set size of this process so far, in MiB (Linux reports ru_maxrss in KiB).
func peakRSSMiB() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_maxrss) / 1024
}

/// Peak RSS of the largest waited-for child process so far, in MiB.
func childrenPeakRSSMiB() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_CHILDREN.rawValue, &usage)
    return Double(usage.ru_maxrss) / 1024
}

/// A fixed-width table printed to stdout.
struct BenchTable {
    var title: String
    var columns: [String]
    var rows: [[String]] = []

    mutating func add(_ row: [String]) { rows.append(row) }

    func print() {
        var widths = columns.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in
                i == 0 ? c.padding(toLength: widths[i], withPad: " ", startingAt: 0) : String(repeating: " ", count: widths[i] - c.count) + c
            }
            .joined(separator: "  ")
        }
        Swift.print("\n\(title)")
        Swift.print(line(columns))
        Swift.print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        for row in rows { Swift.print(line(row)) }
    }
}

func fmt(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }

/// The median of `samples` (of an even count, the upper middle one).
func median(_ samples: [Double]) -> Double { samples.sorted()[samples.count / 2] }

/// Median of `runs` timings of `body`.
func median(runs: Int, _ body: () throws -> Double) rethrows -> Double {
    var samples: [Double] = []
    for _ in 0..<runs { samples.append(try body()) }
    return median(samples)
}

/// Starts the `cloudd` executable with `arguments`, waits for the JSON line it prints when ready
/// and returns the process with its datacenter URLs in DC order.
func launchCloudd(_ executable: String, _ arguments: [String]) throws -> (process: Process, dcURLs: [String]) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    try p.run()
    var line = Data()
    while !line.contains(0x0a) {
        let d = out.fileHandleForReading.availableData
        if d.isEmpty { break }
        line.append(d)
    }
    struct Ready: Decodable { struct DC: Decodable { var id: Int; var url: String }; var dcs: [DC] }
    guard let ready = try? JSONDecoder().decode(Ready.self, from: line.prefix { $0 != 0x0a }) else {
        p.terminate()
        throw BenchError("cloudd did not start: \(String(decoding: line, as: UTF8.self))")
    }
    return (p, ready.dcs.sorted { $0.id < $1.id }.map(\.url))
}
