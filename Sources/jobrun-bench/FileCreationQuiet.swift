import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Waits, before a benchmark times the creation of thousands of files, until creating a file is
/// not slowed by files removed shortly before the benchmark started (by tests, an earlier
/// benchmark run, anything else on the machine).
///
/// On ext4 without a journal, creating a file scans past the inodes of its block group freed in
/// the last minutes (`WorkDirectory` has the kernel's rule). Measured on this kind of machine: an
/// empty file took 13–25 µs to create in a quiet group and 600–1,400 µs in a group where 16,000
/// files had been removed seconds before; and which folder lands in which group is luck (two
/// folders created one after the other took 13 and 650 µs per file). A benchmark started in that
/// state times the luck of each tool's folders, the peers' as much as the product's, instead of
/// the tools. After such a removal the probes below turned quiet 20–363 s later (`sync` did not
/// shorten it). `WorkDirectory` keeps the benchmarks from causing it themselves; this covers what
/// happened before they started.
enum FileCreationQuiet {
    /// Creating an inode slower than this (µs, the probe's mean) is taken as recently freed
    /// inodes being skipped in some of the groups the probe's folders landed in. Quiet, the probe
    /// measured 12–16 µs; at 32 µs it had passed a looser limit while the product's first round
    /// was still slowed.
    static let limitMicroseconds = 25.0

    /// The longest wait: the 360 s for which a freed inode can be skipped, and a margin.
    static let maxWaitSeconds = 420.0

    /// Creates `folders` new folders under `scratch` with `files` empty files in each, and returns
    /// the mean microseconds per inode created (folders and files). Many small folders, each
    /// placed on its own as the product's shard folders are, so that a share of them landing in
    /// slowed groups shows in the mean, while one folder delayed by the scheduler does not. The
    /// files stay: removing them would make their inodes recently freed in turn. Nil if a folder
    /// or file cannot be created.
    static func probe(in scratch: String, round: Int, folders: Int = 64, files: Int = 7) -> Double? {
        let start = DispatchTime.now().uptimeNanoseconds
        for folder in 0..<folders {
            let path = "\(scratch)/creation-probe-\(round)-\(folder)"
            guard mkdir(path, 0o700) == 0 else { return nil }
            for i in 0..<files {
                let fd = open("\(path)/\(i)", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                guard fd >= 0 else { return nil }
                close(fd)
            }
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e3 / Double(folders * (files + 1))
    }

    /// Probes under `scratch` (the benchmark's work directory, so the probe folders are placed
    /// like the tools' folders) until creating a file is fast again or `maxWaitSeconds` have
    /// passed, and prints what it found.
    static func wait(scratch: String, before phase: String) {
        let start = DispatchTime.now().uptimeNanoseconds
        var round = 0
        guard var cost = probe(in: scratch, round: round) else {
            print("file creation before \(phase): cannot probe in \(scratch)")
            return
        }
        if cost <= limitMicroseconds {
            print("file creation before \(phase): \(fmt(cost, 0)) µs per inode (quiet)")
            return
        }
        print(
            "file creation before \(phase): \(fmt(cost, 0)) µs per inode, slowed (on ext4 without a journal: inodes freed in the "
                + "last minutes are being skipped); waiting for it to pass, at most \(fmt(maxWaitSeconds, 0)) s")
        var waited = 0.0
        while cost > limitMicroseconds, waited < maxWaitSeconds {
            sleep(20)
            round += 1
            waited = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            guard let next = probe(in: scratch, round: round) else {
                print("file creation before \(phase): cannot probe in \(scratch) after waiting \(fmt(waited, 0)) s")
                return
            }
            cost = next
        }
        if cost <= limitMicroseconds {
            print("file creation before \(phase): \(fmt(cost, 0)) µs per inode after waiting \(fmt(waited, 0)) s")
        } else {
            print("file creation before \(phase): still \(fmt(cost, 0)) µs per inode after \(fmt(waited, 0)) s: its figures time the file system's state")
        }
    }
}
