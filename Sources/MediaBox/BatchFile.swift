import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One resource of a `MediaBox.storeBatch` chunk, written and waiting for the chunk's sync
/// before it is published under its complete name.
enum BatchFile {
    /// Written under no name (`UnnamedFile`); `size` is the data's length.
    case unnamed(UnnamedFile, paths: ResourceStorePaths, size: Int64)
    /// Written under the partial name, where the file system has no unnamed files.
    case partial(MediaBoxPartialFile)

    var descriptor: Int32 {
        switch self {
        case .unnamed(let file, _, _): return file.descriptor
        case .partial(let partial): return partial.descriptor
        }
    }

    var paths: ResourceStorePaths {
        switch self {
        case .unnamed(_, let paths, _): return paths
        case .partial(let partial): return partial.paths
        }
    }

    var size: Int64 {
        switch self {
        case .unnamed(_, _, let size): return size
        case .partial(let partial): return partial.knownSize ?? 0
        }
    }

    /// Writes the resource's whole `data`. A partial file is then cut to its size, or with
    /// `completeNow` synced and published at once (a batch that syncs each file).
    func write(_ data: Data, completeNow: Bool) throws {
        switch self {
        case .unnamed(let file, let paths, _):
            try data.withUnsafeBytes { try PosixFile.pwriteAll(file.descriptor, $0, offset: 0, path: paths.complete) }
        case .partial(let partial):
            try partial.setSize(Int64(data.count))
            try partial.write(offset: 0, data: data)
            if completeNow { try partial.complete(sync: true) } else { try partial.prepareForBatchCompletion() }
        }
    }

    /// Gives the file its complete name (the directory is synced by the caller, once for the
    /// chunk). An abandoned partial download of the same resource (an interrupted fetch that
    /// left `_partial`, with nobody writing it) goes with it.
    func publish(in media: ConfinedDirectory) throws {
        switch self {
        case .unnamed(let file, let paths, _):
            _ = try file.link(to: paths.relativeComplete, in: media)
            MediaBoxPartialFile.removeAbandoned(paths, in: media)
        case .partial(let partial):
            try partial.publish(syncDirectory: false)
        }
    }

    func close() {
        switch self {
        case .unnamed(let file, _, _): file.close()
        case .partial(let partial): partial.close()
        }
    }
}
