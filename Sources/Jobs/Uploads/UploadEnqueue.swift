import CloudCore
import ConfinedFiles
import Foundation
import Postbox

/// Adds a file to an account's persistent upload queue (`jobrun enqueue-upload`): the account's
/// stores are opened (and created) under the root, the file is staged into its `uploads/`, and
/// the `upload-queue` job sends it later.
public enum UploadEnqueue {
    /// Queues `request` for `account`. A bad request (missing, unreadable or empty file, unknown
    /// peer) is `JobError` with exit 64; a staging or store failure is exit 1.
    /// When the cluster configuration names a bucket (`environment` may name it too), the file is
    /// stored in the bucket instead; an unreachable bucket is exit 69.
    public static func enqueue(
        _ request: UploadRequest, account: Int64, root: DataRoot,
        environment: [String: String] = LaunchEnvironment.variables
    ) async throws(JobError) -> UploadItem {
        let paths = root.account(account)
        let postbox: Postbox
        let uploads: ConfinedDirectory
        let cluster = try ClusterConfig.load(root: root)
        let key = try RootKey.load(root: root, environment: environment)
        do {
            try root.createDirectories()
            try root.verifyLayoutWarning()
            try paths.createDirectories()
            uploads = try paths.uploadsDirectory(create: true)
            postbox = try PostboxStore.open(account: account, paths: paths, cluster: cluster, key: key)
        } catch {
            throw StorageFailure.jobError(error, doing: "cannot open account \(account) under \(root.path)")
        }
        let stageSource = try UploadBucketStaging.source(root: root, account: account, environment: environment)
        let queue = UploadQueue(postbox: postbox, uploads: uploads, stageSource: stageSource)
        do {
            return try await queue.enqueue(request)
        } catch let error as S3Error {
            if error.isRetryable { throw JobError.cloudUnavailable("cannot stage \(request.path) in the bucket: \(error)") }
            throw JobError("cannot stage \(request.path) in the bucket: \(error)", retryable: false)
        } catch let error as MultipartUploadError {
            if case .staging = error { throw JobError(error.description, retryable: false) }
            throw JobError(error.description, exitCode: .usage, retryable: false)
        } catch {
            throw StorageFailure.jobError(error, doing: "cannot enqueue \(request.path)")
        }
    }
}
