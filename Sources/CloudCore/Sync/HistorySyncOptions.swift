import Foundation
import Postbox

/// What one `HistorySync` run pulls: which chats, how much history on a first sync, paging,
/// hole filling and how fast. Mirrors the `sync-history` job parameters.
public struct HistorySyncOptions: Sendable, Equatable {
    /// Peer categories whose history is synced (every listed peer is stored regardless).
    public var categories: Set<PeerCategory> = Set(PeerCategory.allCases)
    /// Only these peer ids (empty: every peer of the chat list).
    public var peerIds: Set<Int64> = []
    /// Chats taken from the top of the chat list (after filtering).
    public var maxPeers: Int = 100
    /// Messages fetched per peer on its first sync (newest first).
    public var initialMessages: Int = 200
    /// Messages per history request, 1…100.
    public var pageSize: Int = 100
    /// Dialogs per chat-list request, 1…100.
    public var dialogPageSize: Int = 100
    /// On a first sync, messages older than this many seconds are not fetched (`nil`: no limit).
    public var lookback: Int64? = 30 * 86_400
    /// Fill known gaps (`HistoryHoleTable`) after the newest messages.
    public var fillHoles: Bool = true
    /// Also fetch again the ranges history retention dropped (`.trimmed` holes) of the chosen
    /// peers; otherwise those stay holes until asked for.
    public var refillTrimmed: Bool = false
    /// Peers synced in parallel.
    public var concurrency: Int = 4
    /// API requests per second, at most (`nil`: unlimited).
    public var requestRate: Double? = 20
    /// Read the chat list and the stored sync state only: report what would be fetched
    /// (`HistorySyncReport.messagesPending`), write nothing, fetch no history.
    public var dryRun: Bool = false

    public init() {}

    /// The Postbox categories of the job-file words `private`, `group`, `channel` (`private`
    /// covers contacts, other users and secret chats). Unknown words are ignored.
    public static func categories(words: [String]) -> Set<PeerCategory> {
        Set(PeerCategory.allCases.filter { words.contains($0.storageClass) })
    }
}
