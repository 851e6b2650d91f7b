import CloudCore
import Foundation
import Jobs
import ServerFixtures

/// A bounded-time mutation fuzzer over every decoder that reads a file an operator (or a
/// hostile local user) can write: job files (`JobFile.parse`), an account's cloud configuration
/// (`AccountCloudConfig.parse`), `cluster.yaml` (`ClusterConfig.parse`) and the state files under
/// `alerts/` and `suspended/` (`RunStateFile.decode`).
///
/// Inputs start from a corpus (the shipped job files, account configurations, hostile shapes)
/// and are mutated by byte edits, YAML-token insertions and line splices. Each input is decoded
/// and checked against properties that hold for every input, valid or not:
/// - the decoder returns (a crash or trap is caught by a signal handler that saves the input);
/// - it returns quickly (an input slower than `slowLimit` is a finding: a quadratic path or an
///   expansion; a slow input is timed twice more and its least time counts, so a moment the
///   process was not running is not taken for the decoder's cost);
/// - every error names a position inside the text (line 1…lines+1, column ≥ 1);
/// - no error is longer than `maximumErrorLength` (errors never echo a file back);
/// - the planted credential of an account configuration never appears in an error;
/// - decoding is deterministic (the same input gives the same answer).
/// Findings are written to `outDir` as `finding-<n>.yaml` with the property they broke.
struct FuzzBenchmark {
    let seconds: Double
    let seed: UInt64
    let jobsDir: String
    let outDir: String

    static let slowLimit = 0.25
    static let maximumErrorLength = 2048
    static let plantedSecret = "PLANTED-SECRET-9c41e7"

    struct Finding {
        var target: String
        var property: String
        var input: String
    }

    struct TargetStats {
        var inputs = 0
        var accepted = 0
        var rejected = 0
        var slowest = 0.0
        var slowestSize = 0
        var seconds = 0.0
    }

    func run() throws {
        try FileManager.default.createDirectory(atPath: outDir, withIntermediateDirectories: true)
        FuzzCrashCapture.install(path: outDir + "/crash.yaml")
        ConfigWarnings.stopPrinting()
        print("Fuzzing the configuration decoders for \(fmt(seconds, 0)) s, seed \(seed)")
        print("(findings are saved to \(outDir); rerun with --seed \(seed) to reproduce)")

        try hostileCases()
        let (stats, findings) = fuzz(try targets())
        try report(stats, findings)
    }

    /// A decoder under fuzzing: its name, the inputs mutations start from, and its check.
    typealias Target = (name: String, corpus: [String], check: (String) -> Outcome)

    /// Every decoder, each with its corpus.
    func targets() throws -> [Target] {
        let jobCorpus = try jobFileCorpus()
        return [
            ("job file", jobCorpus, checkJobFile),
            ("account config", Self.accountConfigCorpus, checkAccountConfig),
            (
                "cluster.yaml", Self.clusterCorpus,
                { input in
                    checkDecoder(input) { text throws(JobError) in _ = try ClusterConfig.parse(text, path: "cluster.yaml", rootDirectory: "/nonexistent-root") }
                }
            ),
            (
                "alerts/<job>", Self.alertCorpus,
                { input in
                    checkDecoder(input) { text throws(JobFileErrors) in _ = try RunStateFile.decode(text, file: "alerts/job", as: AlertStateSection.self) }
                }
            ),
            (
                "suspended/<job>", Self.pauseCorpus,
                { input in
                    checkDecoder(input) { text throws(JobFileErrors) in _ = try RunStateFile.decode(text, file: "suspended/job", as: PauseNoteSection.self) }
                }
            ),
        ]
    }

    /// Mutates the corpora round-robin until the time is up, checking every input.
    func fuzz(_ targets: [Target]) -> ([String: TargetStats], [Finding]) {
        var random = SeededGenerator(seed: seed)
        var findings: [Finding] = []
        var stats = Dictionary(uniqueKeysWithValues: targets.map { ($0.name, TargetStats()) })
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        var round = 0
        while DispatchTime.now().uptimeNanoseconds < deadline {
            round += 1
            let (target, corpus, check) = targets[round % targets.count]
            var input = corpus[random.below(corpus.count)]
            for _ in 0...random.below(4) {
                input = FuzzMutator.mutate(input, corpus: corpus, random: &random)
            }
            let outcome = check(input)
            var s = stats[target]!
            s.inputs += 1
            s.seconds += outcome.seconds
            if outcome.accepted { s.accepted += 1 } else { s.rejected += 1 }
            if outcome.seconds > s.slowest {
                s.slowest = outcome.seconds
                s.slowestSize = input.utf8.count
            }
            stats[target] = s
            for property in outcome.broken where findings.count < 100 {
                findings.append(Finding(target: target, property: property, input: input))
            }
        }
        return (stats, findings)
    }

    /// The table, the findings saved, and the row of the summary.
    func report(_ stats: [String: TargetStats], _ findings: [Finding]) throws {
        var table = BenchTable(
            title: "Fuzzing (mutations of the corpus; every input checked against the properties above)",
            columns: ["decoder", "inputs", "inputs/s", "accepted", "rejected", "slowest input", "its size", "findings"])
        for (name, s) in stats.sorted(by: { $0.key > $1.key }) {
            table.add([
                name, "\(s.inputs)", fmt(Double(s.inputs) / max(s.seconds, 1e-9), 0), "\(s.accepted)", "\(s.rejected)",
                fmt(s.slowest * 1000, 2) + " ms", "\(s.slowestSize) B", "\(findings.filter { $0.target == name }.count)",
            ])
        }
        table.print()
        print("peak RSS \(fmt(peakRSSMiB(), 1)) MiB")
        for (i, finding) in findings.enumerated() {
            let path = "\(outDir)/finding-\(i + 1).yaml"
            try ("# \(finding.target): \(finding.property)\n" + finding.input).write(toFile: path, atomically: true, encoding: .utf8)
            print("FINDING \(i + 1): \(finding.target): \(finding.property) → \(path)")
        }
        if findings.isEmpty { print("no findings") }
        BenchRatios.record(
            "fuzz", "decoder inputs, findings", product: "\(stats.values.map(\.inputs).reduce(0, +)) inputs, \(findings.count) findings",
            peer: "0 findings allowed", ratio: findings.isEmpty ? 1 : 0, target: 1)
        if !findings.isEmpty { throw BenchError("\(findings.count) findings") }
    }

    // MARK: properties

    struct Outcome {
        var accepted: Bool
        var seconds: Double
        var broken: [String]
    }

    func checkJobFile(_ input: String) -> Outcome {
        FuzzCrashCapture.current(input)
        var first: Result<JobFile, JobFileErrors>?
        var accepted = false
        var broken: [String] = []
        let seconds = measure {
            do throws(JobFileErrors) {
                let job = try JobFile.parse(yaml: input, file: "fuzz.yaml")
                accepted = true
                first = .success(job)
            } catch {
                first = .failure(error)
                broken += positionProblems(error.errors.map(\.position), in: input)
                broken += lengthProblems(error.errors.map(\.description))
            }
        }
        let timing = Self.timing(seconds, size: input.utf8.count) { _ = try? JobFile.parse(yaml: input, file: "fuzz.yaml") }
        if let slow = timing.slow { broken.append(slow) }
        if input.utf8.count % 7 == 0 {
            let again = Result { () throws(JobFileErrors) in try JobFile.parse(yaml: input, file: "fuzz.yaml") }
            let same: Bool
            switch (first, again) {
            case (.success(let a)?, .success(let b)): same = a == b
            case (.failure(let a)?, .failure(let b)): same = a.errors == b.errors
            default: same = false
            }
            if !same { broken.append("not deterministic") }
        }
        return Outcome(accepted: accepted, seconds: timing.seconds, broken: broken)
    }

    func checkAccountConfig(_ input: String) -> Outcome {
        FuzzCrashCapture.current(input)
        var accepted = false
        var broken: [String] = []
        let seconds = measure {
            do throws(JobError) {
                _ = try AccountCloudConfig.parse(input, path: "config.yaml", accountDirectory: "/nonexistent-account")
                accepted = true
            } catch {
                broken += lengthProblems([error.description])
                if error.description.contains(Self.plantedSecret) && secretIsOnlyAValue(input) {
                    broken.append("the planted authToken appears in the error")
                }
            }
        }
        let timing = Self.timing(seconds, size: input.utf8.count) {
            _ = try? AccountCloudConfig.parse(input, path: "config.yaml", accountDirectory: "/nonexistent-account")
        }
        if let slow = timing.slow { broken.append(slow) }
        return Outcome(accepted: accepted, seconds: timing.seconds, broken: broken)
    }

    /// A decoder whose errors are one message: it returns, quickly, deterministically, and its
    /// message stays within bounds.
    func checkDecoder<E: Error & CustomStringConvertible>(_ input: String, _ decode: (String) throws(E) -> Void) -> Outcome {
        FuzzCrashCapture.current(input)
        var accepted = false
        var broken: [String] = []
        var first = ""
        let seconds = measure {
            do throws(E) {
                try decode(input)
                accepted = true
            } catch {
                first = error.description
                broken += lengthProblems([first])
            }
        }
        let timing = Self.timing(seconds, size: input.utf8.count) { _ = try? decode(input) }
        if let slow = timing.slow { broken.append(slow) }
        if input.utf8.count % 7 == 0 {
            var again = ""
            do throws(E) { try decode(input) } catch { again = error.description }
            if again != first { broken.append("not deterministic") }
        }
        return Outcome(accepted: accepted, seconds: timing.seconds, broken: broken)
    }

    /// How long an input takes to decode: `first`, or for a decode over `slowLimit` the least of
    /// three timings (`first` and two more with `rerun`), so that a moment the process was not
    /// running is not taken for the decoder's cost; with the "slow" finding if even that is over.
    static func timing(_ first: Double, size: Int, rerun: () -> Void) -> (seconds: Double, slow: String?) {
        guard first > slowLimit else { return (first, nil) }
        let times = [first, measure(rerun), measure(rerun)]
        let least = times.min()!
        guard least > slowLimit else { return (least, nil) }
        return (least, "slow: \(times.map { fmt($0 * 1000, 1) }.joined(separator: ", ")) ms for \(size) bytes")
    }

    /// The planted token is a secret only where it stands as the `authToken` value: a mutation
    /// that moves it into a key or into another key's value makes it that, which errors may name
    /// (within their bounds).
    private func secretIsOnlyAValue(_ input: String) -> Bool {
        input.split(whereSeparator: \.isNewline).allSatisfy { line in
            !line.contains(Self.plantedSecret) || line.drop(while: { $0 == " " }).hasPrefix("authToken:")
        }
    }

    private func positionProblems(_ positions: [SourcePosition], in input: String) -> [String] {
        // YAML's line breaks: LF, CRLF and a lone CR.
        let lines = input.replacingOccurrences(of: "\r\n", with: "\n").split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r" })
            .count
        return positions.compactMap { p in
            (p.line >= 1 && p.line <= lines + 1 && p.column >= 1) ? nil : "error at \(p.line):\(p.column) outside the text (\(lines) lines)"
        }
    }

    private func lengthProblems(_ messages: [String]) -> [String] {
        messages.compactMap { $0.utf8.count > Self.maximumErrorLength ? "an error of \($0.utf8.count) bytes echoes the input" : nil }
    }

    // MARK: hostile shapes, measured

    /// Time and memory of the shapes that used to stall the runner: alias bombs and long lists.
    private func hostileCases() throws {
        var table = BenchTable(title: "Hostile job files", columns: ["input", "size", "seconds", "peak RSS", "answer"])
        for (name, text) in Self.hostileInputs() {
            var answer = ""
            let seconds = measure {
                do throws(JobFileErrors) {
                    let job = try JobFile.parse(yaml: text, file: "hostile.yaml")
                    answer = "accepted (\(job.accounts.count) accounts)"
                } catch {
                    answer = String(error.errors.first?.message.prefix(60) ?? "")
                }
            }
            table.add([name, ByteSize.human(Int64(text.utf8.count)), fmt(seconds, 3), fmt(peakRSSMiB(), 1) + " MiB", answer])
        }
        table.print()
    }

    static func hostileInputs() -> [(String, String)] {
        func aliasBomb(levels: Int) -> String {
            var lines = ["name: bomb", "kind: time-based-cleanup", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
            for level in 1..<levels {
                let previous = Array(repeating: "*a\(level - 1)", count: 10).joined(separator: ", ")
                lines.append("a\(level): &a\(level) [\(previous)]")
            }
            return lines.joined(separator: "\n") + "\n"
        }
        let accounts = (0..<20_000).map(String.init).joined(separator: ", ")
        let longList = """
            name: many-accounts
            kind: time-based-cleanup
            accounts: [\(accounts)]
            params:
              maxSize: 1GiB

            """
        return [
            ("alias bomb, 7 levels × 10", aliasBomb(levels: 7)),
            ("alias bomb, 9 levels × 10", aliasBomb(levels: 9)),
            ("20,000 accounts", longList),
        ]
    }

    // MARK: corpus

    private func jobFileCorpus() throws -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: jobsDir) else {
            throw BenchError("cannot list the job files to start from: no folder \(jobsDir) (--jobs-dir)")
        }
        let files = names.filter { $0.hasSuffix(".yaml") }.sorted()
        guard !files.isEmpty else { throw BenchError("no job files in \(jobsDir) (--jobs-dir)") }
        return try files.map { try String(contentsOfFile: jobsDir + "/" + $0, encoding: .utf8) } + Self.hostileInputs().prefix(1).map(\.1)
    }

    static let clusterCorpus = [
        """
        postgres:
          url: postgresql://jobrun@db.internal:5432/jobrun
          passwordFile: /etc/jobrun/pg-password
          tls: {mode: verify-full, caFile: /etc/jobrun/pg-ca.pem}
          schemaPrefix: jobrun
          lease: 30s
        objectStorage:
          endpoint: https://s3.eu-west-1.amazonaws.com
          bucket: jobrun-fleet
          region: eu-west-1
          addressing: virtual-hosted
          credentialsFile: s3-credentials
          prefix: jobrun/
          partSize: 8MiB
          sharedMedia:
            enabled: true
            maxSize: 200GiB
            ttl: 30d

        """,
        """
        postgres:
          url: postgresql:///jobrun?host=/run/postgresql
          tls: require
          leaseSeconds: 30

        """,
    ]

    static let alertCorpus = [
        #"{"alerted":false,"failures":3,"job":"nightly-sync"}"# + "\n",
        #"{"alerted":true,"failures":1,"job":"cleanup"}"# + "\n",
    ]

    static let pauseCorpus = [
        #"{"job":"nightly-sync","note":"maintenance window","paused_at":"2026-11-29T03:00:00Z","user":"ops"}"# + "\n",
        #"{"job":"cleanup","paused_at":"2026-11-29T03:00:00Z","user":"root"}"# + "\n",
    ]

    static let accountConfigCorpus = [
        """
        datacenters:
          1: http://127.0.0.1:40001
          2: http://127.0.0.1:40002
        cdn: http://127.0.0.1:40101
        mainDc: 2
        authToken: \(plantedSecret)
        referenceTTL: 1h

        """,
        """
        datacenters: [{id: 1, url: "http://127.0.0.1:40000"}, {id: 2, url: "https://dc2.example"}]
        cdn: {id: 101, url: "http://127.0.0.1:40100"}
        authToken: "\(plantedSecret)"

        """,
        """
        datacenters:
          1: http://127.0.0.1:40001
        credentialsFile: credentials.yaml

        """,
    ]
}

/// Mutations that reach the decoders' corners: byte edits, YAML tokens, and line splices.
enum FuzzMutator {
    static let tokens = [
        "&a ", "*a", "<<: *a", "{", "}", "[", "]", ": ", "- ", "\"", "'", "\t", "\u{0}", "!!binary ", "!!int ", "---\n", "...\n",
        "? ", "|\n  ", ">\n  ", "#", "\\", "%YAML 1.1\n", "~", "null", "true", "0x7f", "1e400", "-9223372036854775809",
        "99999999999999999999GiB", "1h1h", "30s", "@hourly", "*/0 * * * *", "61 * * * *", "\u{FEFF}", "\r", "é",
        "\u{202E}", String(repeating: "[", count: 200), String(repeating: "a", count: 300), "params:\n  ", "accounts: [0, 0, 0]",
    ]

    static func mutate(_ input: String, corpus: [String], random: inout SeededGenerator) -> String {
        var bytes = Array(input.utf8)
        switch random.below(8) {
        case 0:  // flip a byte
            if !bytes.isEmpty { bytes[random.below(bytes.count)] = UInt8(truncatingIfNeeded: random.next()) }
        case 1:  // delete a run
            if !bytes.isEmpty {
                let start = random.below(bytes.count)
                bytes.removeSubrange(start..<min(bytes.count, start + 1 + random.below(16)))
            }
        case 2, 3:  // insert a token
            let token = Array(tokens[random.below(tokens.count)].utf8)
            bytes.insert(contentsOf: token, at: random.below(bytes.count + 1))
        case 4:  // duplicate a line
            var lines = input.split(separator: "\n", omittingEmptySubsequences: false)
            if !lines.isEmpty {
                let i = random.below(lines.count)
                lines.insert(lines[i], at: random.below(lines.count + 1))
            }
            return lines.joined(separator: "\n")
        case 5:  // splice a line from another corpus entry
            var lines = input.split(separator: "\n", omittingEmptySubsequences: false)
            let other = corpus[random.below(corpus.count)].split(separator: "\n", omittingEmptySubsequences: false)
            if !other.isEmpty { lines.insert(other[random.below(other.count)], at: random.below(lines.count + 1)) }
            return lines.joined(separator: "\n")
        case 6:  // change an indentation
            var lines = input.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            if !lines.isEmpty {
                let i = random.below(lines.count)
                lines[i] = random.below(2) == 0 ? "  " + lines[i] : String(lines[i].drop(while: { $0 == " " }))
            }
            return lines.joined(separator: "\n")
        default:  // replace a scalar value with an interesting one
            var lines = input.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            if !lines.isEmpty {
                let i = random.below(lines.count)
                if let colon = lines[i].firstIndex(of: ":") {
                    lines[i] = String(lines[i][...colon]) + " " + tokens[random.below(tokens.count)]
                }
            }
            return lines.joined(separator: "\n")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
