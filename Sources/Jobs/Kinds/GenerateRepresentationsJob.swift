import Foundation
import MediaBox
import Postbox
import Synchronization

/// The `generate-representations` kind: makes the derived representations of recent photos
/// that the clients draw (an album thumbnail, a blurred placeholder, optionally a display size)
/// and keeps each in the MediaBox as an entry of its own, in the tier its policy names
/// (see docs/media-storage.md).
///
/// The photos are the complete ones already in the cache (`prefetch-chat-media` downloads them),
/// used within the lookback window, most recent first. A representation already stored is not
/// made again, so reruns, and runs resumed after a kill, only make what is missing. A photo that
/// cannot be decoded (corrupt, truncated, not an image) fails alone: it is logged with its
/// resource id and libvips's reason, counted in `failed` and listed in the report, and the run
/// goes on and exits 0, since the same bytes would fail every run again. libvips is loaded the
/// first time a representation is made; a host that cannot load it fails the run with exit 78
/// (`VipsLibrary.notInstalled`), and a run that finds everything made never loads it.
public struct GenerateRepresentationsJob: JobKind {
    public static let name = "generate-representations"
    public static let summary = "make album thumbnails, blurred placeholders and display sizes of recent photos"
    public static let reportEvent = "representations.report"
    public static let usesCloud = false
    /// After the demo's prefetch: every representation of its photos, the display size in the
    /// short-lived tier.
    public static let demo = KindDemo(params: ["representations: [thumbnail, placeholder, display]"])

    public static let representations = Param<Set<PhotoRepresentationKind>>(
        "representations", default: [.thumbnail, .placeholder], doc: "representations made of each photo")
    public static let thumbnailSize = Param<Int>(
        "thumbnailSize", default: 200, range: 16...1024, doc: "the album thumbnail fits in this many pixels square")
    public static let placeholderSize = Param<Int>(
        "placeholderSize", default: 10, range: 4...64, doc: "the blurred placeholder fits in this many pixels square")
    public static let displaySize = Param<Int>(
        "displaySize", default: 1280, range: 320...4096, doc: "the display size fits in this many pixels square")
    public static let shortLived = Param<Set<PhotoRepresentationKind>>(
        "shortLived", default: [.display],
        doc: "representations kept in the short-lived tier (`short-cache/`, `shortTtl`); the others are general (`cache/`)")
    public static let lookback = Param<Duration>(
        "lookback", default: .days(7), range: 60...(3650 * 86_400), doc: "only photos used more recently than this")
    public static let maxPhotos = Param<Int>(
        "maxPhotos", default: 5000, range: 1...10_000_000, doc: "photos handled per run, most recently used first")
    public static let concurrency = Param<Int>("concurrency", default: 2, range: 1...64, doc: "photos decoded in parallel")

    public static let parameters: [any JobParameter] = [
        representations, thumbnailSize, placeholderSize, displaySize, shortLived, lookback, maxPhotos, concurrency,
    ]

    public init() {}

    /// The representations the parameters choose, in a fixed order.
    public static func policy(_ p: JobParams) -> [PhotoRepresentation] {
        PhotoRepresentationKind.allCases.filter { p[representations].contains($0) }.map { kind in
            let box: Int
            switch kind {
            case .thumbnail: box = p[thumbnailSize]
            case .placeholder: box = p[placeholderSize]
            case .display: box = p[displaySize]
            }
            return PhotoRepresentation(kind: kind, box: box, keepDuration: p[shortLived].contains(kind) ? .shortLived : .general)
        }
    }

    struct Tally {
        var generated = 0, present = 0, failedPhotos = 0
        var bytes: Int64 = 0
        var byKind: [PhotoRepresentationKind: Int] = [:]
        var failures: [(String, String)] = []
        var next = 0
    }

    /// The counters the workers share, behind their lock.
    final class Shared: Sendable {
        let tally = Mutex(Tally())
    }

    public func run(_ context: JobContext) async throws -> JobReport {
        let p = context.params
        let policy = Self.policy(p)
        let box = context.account.mediaBox
        let now = Int64(Date().timeIntervalSince1970)
        let selection = try RepresentationSelection.scan(box.storageBox, since: now - p[Self.lookback].wholeSeconds, limit: p[Self.maxPhotos])
        let log = context.logger
        log.info(
            "representations.selected",
            ["photos": .int(Int64(selection.photos.count)), "over_limit": .int(Int64(selection.overLimit))])
        if context.dryRun {
            let missing = selection.photos.reduce(0) { n, photo in
                n + policy.filter { box.cachedRepresentation(of: photo.id, $0) == nil }.count
            }
            return JobReport(
                counters: ["photos": Int64(selection.photos.count), "pending": Int64(missing)],
                summary: ["would make \(missing) representations of \(selection.photos.count) photos (dry run: nothing made)"])
        }
        let generator = VipsRepresentationGenerator()
        let tally = try await Self.generate(selection.photos, policy: policy, box: box, generator: generator, concurrency: p[Self.concurrency], log: log)
        return Self.report(tally, selection: selection)
    }

    /// Makes what is missing of `policy` for each photo, `concurrency` photos at a time, and
    /// stores what is made as a group commit (`BatchStore`): while one batch of representations
    /// is being synced and indexed, the workers go on decoding, and the next batch holds every
    /// photo made meanwhile (one sync of the data, one of the names and one StorageBox
    /// transaction for all of them). The tally is returned, and reported, only once everything
    /// made is stored; a storage failure fails the run (it is no photo's fault).
    static func generate(
        _ photos: [RepresentationSelection.Photo], policy: [PhotoRepresentation], box: MediaBox,
        generator: any MediaRepresentationGenerator, concurrency: Int, log: JobLogger
    ) async throws -> Tally {
        let shared = Shared()
        let store = BatchStore(mediaBox: box, durability: box.storeDurability, maxBytes: 8 << 20)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<max(1, concurrency) {
                group.addTask {
                    while true {
                        try Task.checkCancellation()
                        let index: Int? = shared.tally.withLock {
                            guard $0.next < photos.count else { return nil }
                            $0.next += 1
                            return $0.next - 1
                        }
                        guard let index else { return }
                        guard let inHand = try await makeAll(photos[index], policy: policy, box: box, generator: generator, shared: shared, log: log)
                        else { continue }
                        for case let .made(id, bytes, info) in inHand { try await store.add(id, bytes, info: info) }
                        shared.tally.withLock {
                            for (representation, item) in zip(policy, inHand) {
                                if case let .made(_, bytes, _) = item {
                                    $0.generated += 1
                                    $0.bytes += Int64(bytes.count)
                                    $0.byKind[representation.kind, default: 0] += 1
                                } else {
                                    $0.present += 1
                                }
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await store.flush()
        return shared.tally.withLock { $0 }
    }

    /// Makes `policy`'s representations of complete photos in `box` as a run does (same workers,
    /// same group commit), outside a run: for measuring the kind. Returns the representations
    /// made and the photos that failed.
    public static func generate(
        _ photos: [(id: MediaResourceId, info: MediaResourceStorageInfo)], policy: [PhotoRepresentation], box: MediaBox,
        generator: any MediaRepresentationGenerator, concurrency: Int, log: JobLogger
    ) async throws -> (generated: Int, failedPhotos: Int) {
        let selected = photos.map { RepresentationSelection.Photo(id: $0.id, info: $0.info, accessTime: 0) }
        let tally = try await generate(selected, policy: policy, box: box, generator: generator, concurrency: concurrency, log: log)
        return (tally.generated, tally.failedPhotos)
    }

    /// One photo's representations, the stored ones found and the missing ones made from one
    /// decode, or nil when the photo failed: a failure ends that photo (the same bytes would fail
    /// every representation) and is counted once.
    static func makeAll(
        _ photo: RepresentationSelection.Photo, policy: [PhotoRepresentation], box: MediaBox,
        generator: any MediaRepresentationGenerator, shared: Shared, log: JobLogger
    ) async throws -> [RepresentationInHand]? {
        do {
            try await Failpoints.hit("representation-before-item")
            return try await box.makeRepresentations(of: photo.id, policy, info: photo.info, generator: generator)
        } catch let error as JobError {
            throw error  // not this photo's fault: libvips cannot be loaded, and no photo can be made
        } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            let reason = "\(error)"
            shared.tally.withLock {
                $0.failedPhotos += 1
                $0.failures.append((photo.id.stringRepresentation, reason))
            }
            log.error(
                "representations.failed",
                [
                    "resource": .string(photo.id.stringRepresentation),
                    "representations": .string(policy.map(\.uniqueId).joined(separator: ",")), "error": .string(reason),
                ])
            return nil
        }
    }

    static func report(_ t: Tally, selection: RepresentationSelection) -> JobReport {
        var counters: [String: Int64] = [
            "photos": Int64(selection.photos.count), "over_limit": Int64(selection.overLimit), "generated": Int64(t.generated),
            "already_present": Int64(t.present), "failed": Int64(t.failedPhotos), "bytes": t.bytes,
        ]
        var samples: [MetricSample] = []
        for kind in PhotoRepresentationKind.allCases {
            counters["generated_\(kind.rawValue)"] = Int64(t.byKind[kind] ?? 0)
            samples.append(
                MetricSample(
                    "representations_generated", labels: ["representation": kind.rawValue], value: Double(t.byKind[kind] ?? 0),
                    help: "representations made by the last run, per representation"))
        }
        var summary = [
            "made \(t.generated) representations (\(ByteSize.human(t.bytes))) of \(selection.photos.count) photos; "
                + "\(t.present) already present, \(t.failedPhotos) photos failed, \(selection.overLimit) left for the next run"
        ]
        for (id, reason) in t.failures.prefix(20) { summary.append("  \(id) failed: \(reason)") }
        var report = JobReport(
            counters: counters, samples: samples, summary: summary,
            details: ["failed_photos": .array(t.failures.map { .object(["resource": .string($0.0), "reason": .string($0.1)]) })])
        report.sampledCounters = Set(PhotoRepresentationKind.allCases.map { "generated_\($0.rawValue)" })
        return report
    }
}
