import Foundation
import MediaBox

/// Helpers for the MediaBox tests: the built `jobrun-testkit` binary, a `du`-style walk of a
/// media directory, and what direct writes need and leave behind (whether a file system takes
/// them, a file's pages in the cache). The bytes the testkit child writes are `MediaTestPattern`.
public enum MediaBoxFixtures {
    /// How many of the file's pages are in the page cache (`mincore` over a mapping of it): a
    /// file written with direct I/O and not read since has (almost) none.
    public static func residentPages(_ path: String) throws -> Int {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path]) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size > 0 else { return 0 }
        let length = Int(st.st_size)
        guard let map = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else { throw CocoaError(.fileReadUnknown) }
        defer { munmap(map, length) }
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        var vector = [UInt8](repeating: 0, count: (length + pageSize - 1) / pageSize)
        guard mincore(map, length, &vector) == 0 else { throw CocoaError(.fileReadUnknown) }
        return vector.reduce(0) { $0 + Int($1 & 1) }
    }

    /// Whether the file system holding `directory` takes direct writes (`O_DIRECT`): tmpfs before
    /// Linux 6.6 and some FUSE mounts do not.
    public static func takesDirectWrites(_ directory: String) -> Bool {
        guard let flag = DirectIO.openFlag else { return false }
        let path = directory + "/.direct-io-probe"
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flag, 0o600)
        guard fd >= 0 else { return false }
        close(fd)
        unlink(path)
        return true
    }

    /// `<products>/jobrun-testkit` (children are started with `ChildProcess`).
    public static var testkit: String { Products.executable("jobrun-testkit") }

    /// Sum of the sizes of regular files under `directory`, skipping the `storage` subdirectory
    /// (what `find DIR -path DIR/storage -prune -o -type f -printf '%s\n'` adds up), and the
    /// same per relative path.
    public static func fileSizes(in directory: String, skipping: Set<String> = ["storage"]) -> [String: Int64] {
        var out: [String: Int64] = [:]
        let fm = FileManager.default
        guard let e = fm.enumerator(atPath: directory) else { return out }
        while let rel = e.nextObject() as? String {
            if skipping.contains(where: { rel == $0 || rel.hasPrefix($0 + "/") }) { e.skipDescendants(); continue }
            var st = stat()
            if lstat(directory + "/" + rel, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG { out[rel] = Int64(st.st_size) }
        }
        return out
    }

    /// Runs `du -sb --apparent-size` over the regular files of `directory` (excluding
    /// `storage/`) with `find … -printf '%s'`, returning the byte sum; nil if find fails.
    public static func findByteCount(_ directory: String) -> Int64? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/find")
        p.arguments = [directory, "-path", directory + "/storage", "-prune", "-o", "-type", "f", "-printf", "%s\n"]
        let pipe = Pipe()
        p.standardOutput = pipe
        guard (try? p.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").reduce(Int64(0)) { $0 + (Int64($1) ?? 0) }
    }
}
