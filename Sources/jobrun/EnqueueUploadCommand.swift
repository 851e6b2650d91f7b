import ArgumentParser
import CloudCore
import Foundation
import Jobs
import Postbox

/// `jobrun enqueue-upload <file> --peer <id>`: adds a file to the account's persistent upload
/// queue (staged into the data root, so the source may vanish); the `upload-queue` job sends it.
struct EnqueueUploadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue-upload",
        abstract: "Queue a file for upload to a chat; the upload-queue job sends it (resumable, sent exactly once).",
        discussion: """
            The file is hard-linked (same file system, owned by you) or copied (0600) into \
            <root>/account-<id>/uploads/, and its size and SHA-256 are recorded: a change before it is \
            sent fails the item with that reason. A symbolic link is followed: the file it points to \
            is staged. When <root>/cluster.yaml (objectStorage) or JOBRUN_S3_* names a bucket, the \
            file is stored in the bucket instead, under a random key, so any host can send it. Empty \
            files are refused (the cloud has no empty uploads). Exit codes: 0 queued, \
            64 bad input (missing, unreadable or empty file, unknown peer), 66 the data root does not exist, 1 staging failed, 69 the \
            bucket is unreachable, 73 the data root cannot be created or written, 74 disk full, \
            78 unsafe data root or invalid cluster configuration.

            Example:
              jobrun enqueue-upload ./report.pdf --peer 1001 --root /var/lib/jobrun
            """
    )

    @OptionGroup var options: GlobalOptions
    @Argument(help: "The file to upload.") var file: String
    @Option(name: .long, help: "Peer (chat) id to send it to.") var peer: Int64
    @Flag(name: .long, help: "Encrypt for a secret chat (AES-256-IGE, random key and IV).") var secret = false
    @Option(name: .long, help: "Message caption.") var caption: String = ""
    @Option(name: .long, help: "File name shown in the chat (default: the file's name).") var name: String?
    @Option(name: .customLong("mime-type"), help: "MIME type of the document.") var mimeType: String?
    @Option(name: .long, help: "How to stage the file: auto (hard link if possible, else copy), copy, link.") var staging: String = "auto"
    @Option(name: .long, help: "Account id.") var account: Int64 = 0

    func run() async throws {
        guard let mode = UploadStaging(rawValue: staging) else {
            throw fail(.usage, "--staging must be one of \(UploadStaging.allCases.map(\.rawValue).joined(separator: ", ")) (got \(staging))")
        }
        let root = try options.existingRoot()
        let source = URL(fileURLWithPath: file).standardizedFileURL.path
        let request = UploadRequest(
            path: source, peerId: peer, secret: secret, caption: caption, name: name,
            mimeType: mimeType, staging: mode)
        let item: UploadItem
        do {
            item = try await UploadEnqueue.enqueue(request, account: account, root: root)
        } catch {
            throw fail(error)
        }
        // Bucket staging keeps no local copy: name the object instead of the future fetch path.
        let staged =
            item.staging?.bucketObject.map { "s3://\($0.bucket)/\($0.key)" }
            ?? item.stagedPath
        if options.json {
            printJSON(
                .object([
                    "item": .int(item.id), "account": .int(account), "peer": .int(peer), "size": .int(item.size),
                    "sha256": .string(item.sha256), "secret": .bool(secret), "staged": .string(staged),
                    "staging": .string(item.staging?.word ?? ""), "random_id": .int(item.randomId),
                ]))
        } else {
            print(
                "queued item \(item.id): \(item.originalName) (\(ByteSize.human(item.size))) for peer \(peer)\(secret ? ", secret" : "") — staged as \(item.staging?.word ?? "copy") at \(staged)"
            )
        }
    }
}
