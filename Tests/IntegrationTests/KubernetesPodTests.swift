import Foundation
import TestSupport
import XCTest

/// No cluster runs here, so these tests give the built binaries exactly the view a pod of
/// `jobrun units --kubernetes` would give them, and run them in it: an otherwise empty root
/// file system holding only the binaries and the shared libraries they load (what the
/// Containerfile's image holds), mounted read-only (`readOnlyRootFilesystem`), the kubelet's
/// Secret and ConfigMap volume layout (`..data` links, the modes and owners with and without
/// `fsGroup`), an `emptyDir` data root, and the manifest's user, group, supplementary group,
/// arguments and environment. A private mount namespace (`unshare`) and `chroot --userspec` make
/// that view; the tests need root for them.
final class KubernetesPodTests: XCTestCase {
    /// What the generated CronJob says about its pod.
    struct PodSpec {
        var user: UInt32
        var group: UInt32
        var fsGroup: UInt32
        var secretMode: Int
        var arguments: [String]
        var environment: [String: String]
    }

    static func podSpec(from manifest: String) throws -> PodSpec {
        func number(_ key: String) throws -> Int {
            let line = try XCTUnwrap(manifest.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(key + ":") }, key)
            return try XCTUnwrap(Int(line.split(separator: ":")[1].split(separator: "#")[0].trimmingCharacters(in: .whitespaces)), String(line))
        }
        let argsLine = try XCTUnwrap(manifest.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("args: [") })
        let array = argsLine.trimmingCharacters(in: .whitespaces).dropFirst("args: ".count)
        let arguments = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(array.utf8)) as? [String])
        let lines = manifest.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        var environment: [String: String] = [:]
        for (i, line) in lines.enumerated() where line.hasPrefix("- name: JOBRUN_") && i + 1 < lines.count && lines[i + 1].hasPrefix("value: ") {
            environment[String(line.dropFirst("- name: ".count))] = lines[i + 1].dropFirst("value: ".count).trimmingCharacters(
                in: CharacterSet(charactersIn: "\""))
        }
        return PodSpec(
            user: UInt32(try number("runAsUser")), group: UInt32(try number("runAsGroup")), fsGroup: UInt32(try number("fsGroup")),
            secretMode: try number("defaultMode"), arguments: arguments, environment: environment)
    }

    /// A root file system holding `binaries` (at /usr/local/bin), the shared objects in `loaded`
    /// (libraries the process opens itself, as jobrun opens libvips, at their own paths), and
    /// every library `ldd` says any of them loads; nothing else but empty mount points.
    static func imageRoot(_ binaries: [String], loaded: [String] = [], in dir: TemporaryDirectory) throws -> String {
        let root = dir.file("image")
        for path in ["usr/local/bin", "proc", "dev", "etc/jobrun/jobs", "etc/jobrun/cluster", "var/lib/jobrun"] {
            try FileManager.default.createDirectory(atPath: root + "/" + path, withIntermediateDirectories: true)
        }
        func copy(_ library: String) throws {
            let copy = try ChildProcess.run("/bin/cp", ["-L", "--parents", "-n", library, root])
            XCTAssertEqual(copy.status, 0, copy.stderr)
        }
        for binary in binaries {
            try FileManager.default.copyItem(atPath: binary, toPath: root + "/usr/local/bin/" + (binary as NSString).lastPathComponent)
        }
        for library in loaded { try copy(library) }
        for file in binaries + loaded {
            let ldd = try ChildProcess.run("/usr/bin/ldd", [file])
            XCTAssertEqual(ldd.status, 0, ldd.stderr)
            for line in ldd.stdout.split(separator: "\n") {
                let words = line.split(whereSeparator: \.isWhitespace).map(String.init)
                guard let library = words.first(where: { $0.hasPrefix("/") }) else { continue }
                try copy(library)
            }
        }
        return root
    }

    /// Where the dynamic loader finds `soname` on this host (`ldconfig -p`).
    static func installedLibrary(_ soname: String) throws -> String {
        let cache = try ChildProcess.run("/sbin/ldconfig", ["-p"])
        let path = cache.stdout.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(soname + " ") }
            .flatMap { $0.components(separatedBy: " => ").last }
        return try XCTUnwrap(path, "\(soname) is not installed (scripts/install-deps.sh)")
    }

    /// The kubelet's layout of a Secret or ConfigMap volume: the files in a timestamped folder,
    /// `..data` linking to it, and a link per file; owned by root and, with `fsGroup`, by its
    /// group, with the group's read bit added.
    static func volume(_ files: [String: String], mode: Int, fsGroup: UInt32?, at path: String) throws {
        let stamped = path + "/..2026_11_29_03_00_00.000000001"
        try FileManager.default.createDirectory(atPath: stamped, withIntermediateDirectories: true)
        chmod(path, 0o1777)
        chmod(stamped, 0o755)
        for (name, text) in files {
            try text.write(toFile: stamped + "/" + name, atomically: false, encoding: .utf8)
            chown(stamped + "/" + name, 0, fsGroup ?? 0)
            chmod(stamped + "/" + name, mode_t(fsGroup == nil ? mode : mode | 0o440))
            try FileManager.default.createSymbolicLink(atPath: path + "/" + name, withDestinationPath: "..data/" + name)
        }
        try FileManager.default.createSymbolicLink(atPath: path + "/..data", withDestinationPath: (stamped as NSString).lastPathComponent)
    }

    /// Runs `arguments` in the pod's view: `image` read-only, the volumes mounted where the
    /// manifest mounts them, as `spec`'s user with `fsGroup` as supplementary group when given.
    static func runInPod(
        image: String, data: String, secret: String, jobs: String, spec: PodSpec, fsGroup: Bool, arguments: [String], timeout: TimeInterval = 300
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        func q(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        // subPath: the kubelet bind-mounts the Secret's file over a file it creates in the volume.
        _ = FileManager.default.createFile(atPath: data + "/cluster.yaml", contents: nil)
        let environment = spec.environment.map { "\($0.key)=\($0.value)" }.sorted().map(q).joined(separator: " ")
        let groups = fsGroup ? "--groups=\(spec.fsGroup)" : ""
        let script = """
            set -e
            r=\(q(image))
            mount --bind "$r" "$r" && mount -o remount,bind,ro "$r"
            mount -t proc proc "$r/proc"
            mount --rbind /dev "$r/dev"
            mount --bind \(q(data)) "$r/var/lib/jobrun"
            mount --bind \(q(secret)) "$r/etc/jobrun/cluster" && mount -o remount,bind,ro "$r/etc/jobrun/cluster"
            mount --bind \(q(secret))/cluster.yaml "$r/var/lib/jobrun/cluster.yaml" && mount -o remount,bind,ro "$r/var/lib/jobrun/cluster.yaml"
            mount --bind \(q(jobs)) "$r/etc/jobrun/jobs" && mount -o remount,bind,ro "$r/etc/jobrun/jobs"
            exec env -i PATH=/usr/local/bin \(environment) /usr/sbin/chroot --userspec=\(spec.user):\(spec.group) \(groups) "$r" /usr/local/bin/jobrun \(arguments.map(q).joined(separator: " "))
            """
        let p = try ChildProcess("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script])
        let status = p.wait(timeout: timeout)
        return (status, p.stdout, p.stderr)
    }

    private func requireRoot() throws {
        if geteuid() != 0 { throw XCTSkip("mount namespaces and chroot need root") }
    }

    func testAGeneratedCronJobRunsAJobWithThePodsUsersModesAndVolumes() throws {
        try requireRoot()
        let h = JobrunHarness()
        let job = "name: tidy\nkind: time-based-cleanup\nschedule: \"*/5 * * * *\"\nparams:\n  maxSize: 1GiB\n"
        try h.writeJob("tidy", job)
        let manifests = h.dir.file("k8s")
        let units = try ChildProcess(h.binary, ["units", "--kubernetes", "--out", manifests, "--jobs-dir", h.jobsDir])
        XCTAssertEqual(units.wait(), 0, units.stderr)
        let spec = try Self.podSpec(from: String(contentsOfFile: manifests + "/jobrun-tidy.yaml", encoding: .utf8))
        XCTAssertEqual(spec.secretMode, 0o440)
        XCTAssertNotEqual(spec.user, 0)

        let image = try Self.imageRoot([h.binary], in: h.dir)
        let cluster = "# The fleet's shared settings; none in this pod.\n"
        for fsGroup in [true, false] {
            let pod = h.dir.file("pod-\(fsGroup)")
            let data = pod + "/data"
            try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
            // emptyDir: 0777, and with fsGroup its group and the setgid bit.
            chown(data, 0, fsGroup ? spec.fsGroup : 0)
            chmod(data, fsGroup ? 0o2777 : 0o777)
            let group: UInt32? = fsGroup ? spec.fsGroup : nil
            try Self.volume(["cluster.yaml": cluster], mode: spec.secretMode, fsGroup: group, at: pod + "/secret")
            try Self.volume(["tidy.yaml": job], mode: 0o644, fsGroup: group, at: pod + "/jobs")
            let run = try Self.runInPod(
                image: image, data: data, secret: pod + "/secret", jobs: pod + "/jobs", spec: spec, fsGroup: fsGroup, arguments: spec.arguments)
            if fsGroup {
                XCTAssertEqual(run.status, 0, "the pod with fsGroup runs the job: \(run.stderr)")
                let finished = (run.stdout + run.stderr).split(separator: "\n").compactMap {
                    try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
                }.first { $0["event"] as? String == "run.finished" }
                XCTAssertEqual(finished?["outcome"] as? String, "succeeded", "JSON log lines on the container's output: \(run.stdout)\(run.stderr)")
                XCTAssertFalse(FileManager.default.fileExists(atPath: data + "/logs/run-logs/run.log"), "no log file in the pod")
                var st = stat()
                XCTAssertEqual(stat(data + "/account-0", &st), 0)
                XCTAssertEqual(st.st_uid, spec.user, "the pod's user wrote the data root")
            } else {
                // Without fsGroup the Secret's files are root's group: the pod's user cannot read them.
                XCTAssertEqual(run.status, 78, run.stderr)
                XCTAssertTrue(run.stderr.contains("cluster.yaml"), run.stderr)
                XCTAssertFalse(run.stderr.contains("shared settings"), "no line of the file in the message")
            }
        }
    }

    func testTheImagesFilesAloneRunTheDemoAsTheNonRootUser() throws {
        try requireRoot()
        let h = JobrunHarness()
        let cloudd = try Products.builtExecutable("cloudd")
        // The image installs libvips, which the demo's representations load (as the Containerfile's
        // runtime image does).
        let image = try Self.imageRoot([h.binary, cloudd], loaded: [try Self.installedLibrary("libvips.so.42")], in: h.dir)
        let data = h.dir.file("demo-data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        chown(data, 65532, 65532)
        chmod(data, 0o700)
        let secret = h.dir.file("no-secret")
        try Self.volume(["cluster.yaml": ""], mode: 0o440, fsGroup: 65532, at: secret)
        let jobs = h.dir.file("no-jobs")
        try Self.volume([:], mode: 0o644, fsGroup: 65532, at: jobs)
        try? FileManager.default.removeItem(atPath: data + "/cluster.yaml")
        let spec = PodSpec(user: 65532, group: 65532, fsGroup: 65532, secretMode: 0o440, arguments: [], environment: [:])
        let demo = try Self.runInPod(
            image: image, data: data, secret: secret, jobs: jobs, spec: spec, fsGroup: true, arguments: ["demo", "--root", "/var/lib/jobrun/demo"])
        XCTAssertEqual(demo.status, 0, "the demo runs from the image's files alone, as 65532: \(demo.stdout)\(demo.stderr)")
        XCTAssertTrue(demo.stdout.contains("sync-history"), demo.stdout)
    }
}
