import CloudCore
import Foundation

/// Upload staging in the fleet's bucket: when the cluster configuration (`objectStorage:` in
/// `<root>/cluster.yaml`, or `JOBRUN_S3_*`) names a bucket, `enqueue-upload` stores the file there
/// and `upload-queue` on any host fetches it back; otherwise staging stays local.
enum UploadBucketStaging {
    /// The stage source for `account` under `root`, or `nil` when no bucket is configured.
    static func source(root: DataRoot, account: Int64, environment: [String: String]) throws(JobError) -> (any UploadStageSource)? {
        guard let config = try ObjectStorageConfig.load(root: root, environment: environment) else { return nil }
        let transport: any Transport
        do { transport = try CurlTransport() } catch {
            throw JobError.config("cannot set up the transport for \(config.bucket): \(error)")
        }
        let client = try config.client(transport: transport, environment: environment)
        let upload = S3FileUpload(client: client, partSize: config.partSize, multipartThreshold: config.partSize)
        return S3UploadStaging(upload: upload, prefix: config.prefix + "uploads/account-\(account)/", fetchChunk: config.partSize)
    }

    /// The data root an account's paths live under.
    static func root(of paths: AccountPaths) -> DataRoot { DataRoot(url: paths.directory.deletingLastPathComponent()) }
}
