import ArgumentParser
import Foundation
import Jobs
import MediaBox

/// `jobrun stats`: cache usage per account, tier, peer and content type, from StorageBox's
/// running totals (no file-system walk), opened read-only.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Media cache usage by tier, peer and content type (from the index; read-only).",
        discussion: """
            Examples:
              jobrun stats --root /var/lib/jobrun --top 5
              jobrun stats --database --account 0
              jobrun stats --json | jq '.accounts[].bytes'
            """)

    @OptionGroup var options: GlobalOptions
    @Option(help: "Only this account.") var account: Int64?
    @Option(help: "Peers listed (largest first).") var top = 20
    @Flag(help: "Postbox database usage instead: bytes per table and per peer, WAL, free pages.") var database = false

    /// Where each keep tier's representations live (derived images, not downloads).
    private var representationTiers: [(tier: MediaStorageTier, location: MediaStorageLocation)] {
        [(.general, .cache), (.shortLived, .shortCache)]
    }

    func run() throws {
        let root = try options.existingRoot()
        let inspection = StoreInspection(root: root)
        if database { return try databaseStats(inspection) }
        let caches: [StoreInspection.AccountCache]
        do { caches = try inspection.cacheStats(accounts: account.map { [$0] }) } catch { throw fail(error) }
        var json: [LogValue] = []
        for cache in caches {
            let (id, media, stats) = (cache.account, cache.mediaPath, cache.stats)
            if options.json {
                json.append(
                    .object([
                        "account": .int(id), "bytes": .int(stats.total.bytes), "files": .int(stats.total.count),
                        "not_indexed": usage(cache.notIndexed), "partial_prefixes": usage(cache.partialPrefixes),
                        "by_tier": .object(Dictionary(uniqueKeysWithValues: stats.byLocation.map { ($0.key.description, usage($0.value)) })),
                        "representations_by_tier": .object(
                            Dictionary(
                                uniqueKeysWithValues: representationTiers.map { ($0.tier.description, usage(stats.byLocation[$0.location] ?? StorageUsage())) })
                        ),
                        "by_content_type": .object(Dictionary(uniqueKeysWithValues: stats.byContentType.map { ($0.key.description, usage($0.value)) })),
                        "by_peer": .array(
                            stats.byPeer.sorted { $0.value.bytes > $1.value.bytes }.map {
                                .object(["peer": .int($0.key.rawValue), "bytes": .int($0.value.bytes), "files": .int($0.value.count)])
                            }),
                        "by_peer_and_content_type": .array(
                            stats.byPeerAndContentType.sorted { $0.key < $1.key }.map {
                                .object([
                                    "peer": .int($0.key.peerId.rawValue), "content_type": .string($0.key.contentType.description),
                                    "bytes": .int($0.value.bytes), "files": .int($0.value.count),
                                ])
                            }),
                    ]))
                continue
            }
            print("account \(id): \(ByteSize.human(stats.total.bytes)) in \(stats.total.count) files (\(media))")
            if cache.notIndexed.count > 0 {
                print("  not indexed: \(line(cache.notIndexed)) (files the index does not count; `time-based-cleanup` with reconcile indexes or removes them)")
            }
            if cache.partialPrefixes.count > 0 {
                print(
                    "  partial prefixes: \(line(cache.partialPrefixes)) (header and first bytes of streamable videos; counted, limited and evicted like any file)"
                )
            }
            print("  by tier:")
            for (tier, u) in stats.byLocation.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                print("    \(tier.description.padding(toLength: 12, withPad: " ", startingAt: 0)) \(line(u))")
            }
            print("  representations by tier:")
            for (tier, location) in representationTiers {
                let u = stats.byLocation[location] ?? StorageUsage()
                print("    \(tier.description.padding(toLength: 12, withPad: " ", startingAt: 0)) \(line(u))  [\(location.description)/]")
            }
            print("  by content type:")
            for (type, u) in stats.byContentType.sorted(by: { $0.value.bytes > $1.value.bytes }) {
                print("    \(type.description.padding(toLength: 12, withPad: " ", startingAt: 0)) \(line(u))")
            }
            print("  by peer (top \(top)):")
            for (peer, u) in stats.byPeer.sorted(by: { $0.value.bytes > $1.value.bytes }).prefix(top) {
                let types = stats.byPeerAndContentType.filter { $0.key.peerId == peer }.sorted { $0.value.bytes > $1.value.bytes }
                    .map { "\($0.key.contentType.description) \(ByteSize.human($0.value.bytes))" }.joined(separator: ", ")
                print("    \(String(peer.rawValue).padding(toLength: 12, withPad: " ", startingAt: 0)) \(line(u))  [\(types)]")
            }
        }
        if options.json {
            printJSON(.object(["version": .int(1), "root": .string(root.path), "accounts": .array(json)]))
        } else if caches.isEmpty {
            print("no media caches under \(root.path)")
        }
    }

    private func databaseStats(_ inspection: StoreInspection) throws {
        let usages: [StoreInspection.AccountDatabase]
        do { usages = try inspection.databaseUsage(accounts: account.map { [$0] }) } catch { throw fail(error) }
        if options.json {
            printJSON(
                .object([
                    "version": .int(1), "root": .string(inspection.root.path),
                    "accounts": .array(usages.map { DatabaseUsageReport.json($0.usage, account: $0.account, top: top) }),
                ]))
        } else if usages.isEmpty {
            print("no Postbox databases under \(inspection.root.path)")
        } else {
            for entry in usages { DatabaseUsageReport.lines(entry.usage, account: entry.account, top: top).forEach { print($0) } }
        }
    }

    private func usage(_ u: StorageUsage) -> LogValue { .object(["bytes": .int(u.bytes), "files": .int(u.count)]) }
    private func line(_ u: StorageUsage) -> String { "\(ByteSize.human(u.bytes).padding(toLength: 10, withPad: " ", startingAt: 0)) \(u.count) files" }
}
