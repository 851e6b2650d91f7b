import Foundation
import Postbox

/// Turns a `HistoryRetentionReport` into the run's counters, metric samples, summary lines,
/// log fields and `--json` details.
enum RetentionReporting {
    static func counters(_ r: HistoryRetentionReport) -> [String: Int64] {
        [
            "peers_seen": Int64(r.peersSeen), "peers_excluded": Int64(r.peersExcluded), "peers_trimmed": Int64(r.byPeer.filter { $0.messages > 0 }.count),
            "messages_removed": Int64(r.messagesRemoved), "references_removed": Int64(r.referencesRemoved),
            "bytes_removed": r.bytesRemoved, "kept_in_use": Int64(r.keptInUse), "holes_added": Int64(r.holesAdded),
            "transactions": Int64(r.transactions), "upload_items_pruned": Int64(r.uploadItemsPruned),
            "upload_parts_pruned": Int64(r.uploadPartsPruned), "database_bytes_before": r.databaseBytesBefore,
            "database_bytes_after": r.databaseBytesAfter, "bytes_reclaimed": r.bytesReclaimed,
            "vacuum_steps": Int64(r.vacuumSteps), "wal_bytes": r.walBytesAfter, "free_pages": r.freePagesAfter,
            "size_rounds": Int64(r.sizeRounds), "under_limit": r.underLimit ? 1 : 0,
            "estimated_bytes_freed": r.estimatedBytesFreed,
        ]
    }

    static func samples(_ r: HistoryRetentionReport) -> [MetricSample] {
        r.byPeer.prefix(100).flatMap { row in
            [
                MetricSample(
                    "retention_removed_messages", labels: ["peer": String(row.peer.rawValue)], value: Double(row.messages),
                    help: "messages removed by the last history retention, per peer"),
                MetricSample(
                    "retention_removed_bytes", labels: ["peer": String(row.peer.rawValue)], value: Double(row.bytes),
                    help: "row bytes removed by the last history retention, per peer"),
            ]
        }
    }

    static func reasons(_ row: HistoryRetentionReport.PeerRow) -> String {
        RetentionReason.allCases.filter(row.reasons.contains).map(\.rawValue).joined(separator: "+")
    }

    static func summary(_ r: HistoryRetentionReport, top: Int = 10) -> [String] {
        let verb = r.dryRun ? "would remove" : "removed"
        var head = "\(verb) \(r.messagesRemoved) messages of \(r.byPeer.filter { $0.messages > 0 }.count) peers"
        if !r.dryRun { head += ", \(r.referencesRemoved) file references, \(r.holesAdded) ranges now holes" }
        if r.keptInUse > 0 { head += "; \(r.keptInUse) kept (media in use)" }
        var lines = [head]
        if r.dryRun {
            lines.append("database \(ByteSize.human(r.databaseBytesBefore)); about \(ByteSize.human(r.estimatedBytesFreed)) would be freed")
        } else {
            lines.append(
                "database \(ByteSize.human(r.databaseBytesBefore)) → \(ByteSize.human(r.databaseBytesAfter)) (\(ByteSize.human(r.bytesReclaimed)) returned in \(r.vacuumSteps) vacuum steps), WAL \(ByteSize.human(r.walBytesAfter))"
            )
        }
        if let limit = r.sizeLimit {
            lines.append(
                "size limit \(ByteSize.human(limit)): \(r.underLimit ? "under it" : "still over it (everything left is kept by keepNewest, exclusions or use)")"
            )
        }
        if r.uploadItemsPruned > 0 {
            lines.append("\(r.dryRun ? "would prune" : "pruned") \(r.uploadItemsPruned) finished upload items (\(r.uploadPartsPruned) parts)")
        }
        for row in r.byPeer.prefix(top) where row.messages > 0 {
            lines.append(
                "  peer \(row.peer.rawValue): \(row.messages) messages, ids \(row.lowestId)…\(row.highestId), \(ByteSize.human(row.bytes)) (\(reasons(row)))")
        }
        return lines
    }

    static func peerObject(_ row: HistoryRetentionReport.PeerRow) -> LogValue {
        .object([
            "peer": .int(row.peer.rawValue), "messages": .int(Int64(row.messages)), "references": .int(Int64(row.references)),
            "bytes": .int(row.bytes), "kept_in_use": .int(Int64(row.keptInUse)),
            "lowest_id": .int(Int64(row.messages > 0 ? row.lowestId : 0)), "highest_id": .int(Int64(row.messages > 0 ? row.highestId : 0)),
            "oldest": .int(Int64(row.messages > 0 ? row.oldestTimestamp : 0)), "newest": .int(Int64(row.messages > 0 ? row.newestTimestamp : 0)),
            "reason": .string(reasons(row)),
        ])
    }

    static func details(_ r: HistoryRetentionReport, listLimit: Int) -> [String: LogValue] {
        let rows = r.byPeer.filter { $0.messages > 0 }.prefix(listLimit).map(peerObject)
        return ["dry_run": .bool(r.dryRun), r.dryRun ? "would_remove" : "by_peer": .array(Array(rows))]
    }
}
