import Foundation
import Jobs
import Postbox

/// An example kind, not shipped: counts the messages an account's Postbox holds per peer, at
/// most `maxPeers` peers. It is everything a new kind needs — its name, summary, report event,
/// typed parameters and work — and `ExampleKindTests` runs it through the real runner.
struct CountMessagesJob: JobKind {
    static let name = "count-messages"
    static let summary = "count the messages stored in Postbox, per peer"
    static let reportEvent = "count.report"
    static let usesCloud = false
    static let demo = KindDemo()

    static let maxPeers = Param<Int>("maxPeers", default: 1000, range: 1...1_000_000, doc: "peers counted, at most")
    static let minimum = OptionalParam<Int>("minimum", range: 0...1_000_000, doc: "fail when fewer messages are stored")

    static let parameters: [any JobParameter] = [maxPeers, minimum]

    func run(_ context: JobContext) async throws -> JobReport {
        let limit = context.params[Self.maxPeers]
        let (peers, messages) = try await context.account.postbox.read { tx -> (Int, Int) in
            let peers = try tx.peers.all().prefix(limit)
            return (peers.count, try peers.reduce(0) { $0 + (try tx.messages.count(peer: $1.id)) })
        }
        let report = JobReport(
            counters: ["peers": Int64(peers), "messages": Int64(messages)],
            summary: ["\(messages) messages in \(peers) peers"])
        if let minimum = context.params[Self.minimum], messages < minimum {
            throw JobError("only \(messages) messages stored, fewer than \(minimum)", retryable: false, report: report)
        }
        return report
    }
}
