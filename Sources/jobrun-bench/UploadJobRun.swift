import CloudCore
import Foundation
import Jobs
import Postbox

/// Small files sent the way an operator sends them: queued into a data root, then one
/// `jobrun run` of an `upload-queue` job, timed as a child process from its start to its exit.
/// Beyond the upload engine it counts the process start, the claims and leases of the queue's
/// workers, the run's log lines and its closing record.
struct UploadJobRun {
    let dcURLs: [String]
    let concurrency: Int
    let peer: Int64
    /// The server's CPU seconds so far (`PhaseCPU`).
    let serverCPU: () -> Double?

    /// Queues `files` into a fresh root under `directory` (not timed), runs the job, checks that
    /// every item was sent, and returns the run's wall-clock seconds and its CPU line (the
    /// job's process and the server's, over the run alone).
    func run(_ files: [String], in directory: String) async throws -> (seconds: Double, cpu: String) {
        let jobrun = siblingExecutable("jobrun")
        guard FileManager.default.isExecutableFile(atPath: jobrun) else {
            throw BenchError("build jobrun first: \(jobrun) is missing (swift build -c release --product jobrun)")
        }
        let root = DataRoot(path: directory + "/root")
        try root.createDirectories(accounts: [0])
        let account = root.account(0)
        let config = "datacenters:\n" + dcURLs.enumerated().map { "  \($0.offset + 1): \($0.element)\n" }.joined() + "mainDc: 1\nrequestTimeout: 300s\n"
        try config.write(to: account.config, atomically: true, encoding: .utf8)
        chmod(account.config.path, 0o600)
        let jobs = directory + "/jobs"
        try FileManager.default.createDirectory(atPath: jobs, withIntermediateDirectories: true)
        try """
        name: bench-upload
        kind: upload-queue
        timeout: 1h
        params:
          concurrency: \(concurrency)
        """.write(toFile: jobs + "/bench-upload.yaml", atomically: true, encoding: .utf8)

        let postbox = try Postbox(directory: account.postboxDatabase.path)
        let queue = UploadQueue(postbox: postbox, directory: account.uploads.path)
        _ = try await queue.enqueue(files.map { UploadRequest(path: $0, peerId: peer) })
        settleDisk()

        var status: Int32 = -1
        var cpu = PhaseCPU(server: serverCPU)
        let seconds = try measure { status = try spawn(jobrun, ["run", "bench-upload", "--root", root.url.path, "--jobs-dir", jobs]) }
        let cpuLine = cpu.report(client: "jobrun", isChild: true)
        guard status == 0 else { throw BenchError("jobrun run of the upload-queue job exited \(status)") }
        let sent = try await postbox.read { tx in
            var n = 0
            try tx.uploadQueue.scan {
                if $0.state == .sent { n += 1 }
                return true
            }
            return n
        }
        guard sent == files.count else { throw BenchError("the upload-queue job sent \(sent) of \(files.count) files") }
        return (seconds, cpuLine)
    }
}
