// Object-storage child-process commands (SIGKILL-midway multipart upload tests).
import CloudCore
import Foundation

/// - `s3-upload <endpoint> <bucket> <key> <file> <journal> <partSize> [stallAfterParts]`:
///   uploads `file` to `key` with ``S3FileUpload`` (credentials from `AWS_ACCESS_KEY_ID` /
///   `AWS_SECRET_ACCESS_KEY`), one part at a time, printing `part <n>` as the service
///   acknowledges each one and `done <sha256>` at the end. With `stallAfterParts`, it stops
///   doing anything after that many parts (it prints `stalled`) so a parent can SIGKILL it at
///   a known point.
let objectStorageCommands: [String: TestkitCommand] = [
    "s3-upload": s3Upload
]

private func s3Upload(_ args: [String]) throws {
    guard args.count >= 6, let partSize = Int64(args[5]) else {
        throw TestkitError.usage(
            "s3-upload <endpoint> <bucket> <key> <file> <journal> <partSize> [stallAfterParts]")
    }
    let stallAfter = args.count > 6 ? Int(args[6]) : nil
    guard let credentials = try S3Credentials.fromEnvironment(ProcessInfo.processInfo.environment) else {
        throw S3CredentialsError.none
    }
    let counter = PartCounter()
    try blockingAwait {
        let client = S3Client(
            transport: try CurlTransport(), bucket: S3Bucket(endpoint: args[0], name: args[1]), credentials: credentials)
        let upload = S3FileUpload(client: client, partSize: partSize, multipartThreshold: partSize, concurrentParts: 1)
        let result = try await upload.upload(file: args[3], to: args[2], journalPath: args[4]) { number in
            emit("part \(number)")
            if let stallAfter, counter.increment() >= stallAfter {
                emit("stalled")
                while true { sleep(60) }
            }
        }
        emit("done \(result.sha256.hexString)")
    }
}

/// Parts acknowledged so far (the callback runs on the upload's task, one at a time).
private final class PartCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() -> Int {
        lock.lock()
        defer { lock.unlock() }
        count += 1
        return count
    }
}
