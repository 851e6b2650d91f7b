import ArgumentParser
import Foundation
import Jobs
import MediaBox

/// `jobrun fetch --resource ID [--range A-B] [--priority maximum]`: a one-off fetch into the
/// account's shared MediaBox that prints the file's path and the ranges now held.
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch one stored media resource (or a byte range of it) into the shared media cache.",
        discussion: """
            The resource is one of the account's stored messages' media or chats' avatars, named by \
            its resource id (as `jobrun stats` and the prefetch logs show it). A streamable video's \
            header comes first. When another process is fetching the same resource (a scheduled \
            prefetch), it is asked for the wanted ranges and fetches them next, at this priority: \
            no byte is downloaded twice. Prints the path of the complete or partial file and the \
            ranges it holds. Exit codes: 0 fetched, 1 the fetch failed, 64 bad input (unknown \
            resource, bad range or priority), 66 the data root does not exist, 78 invalid account \
            configuration.

            Example:
              jobrun fetch --resource telegram-cloud-document-2-10000042 --range 0-2097151 --priority maximum
            """
    )

    @OptionGroup var options: GlobalOptions
    @Option(name: .long, help: "Resource id to fetch.") var resource: String
    @Option(name: .long, help: "Byte range A-B (inclusive, as in HTTP); default: the whole resource.") var range: String?
    @Option(name: .long, help: "default, elevated or maximum.") var priority: String = "default"
    @Option(name: .long, help: "Account id.") var account: Int64 = 0

    func run() async throws {
        guard let priority = MediaFetchPriority(name: priority) else {
            throw fail(.usage, "--priority must be default, elevated or maximum (got \(ShownText.escaped(priority)))")
        }
        var ranges: [Range<Int64>]?
        if let range {
            let bounds = range.split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 2, let lower = Int64(bounds[0]), let upper = Int64(bounds[1]), lower >= 0, upper >= lower else {
                throw fail(.usage, "--range must be A-B with 0 ≤ A ≤ B (got \(ShownText.escaped(range)))")
            }
            ranges = [lower..<(upper + 1)]
        }
        let root = try options.existingRoot()
        let outcome: ResourceFetch.Outcome
        do {
            outcome = try await ResourceFetch.fetch(resourceId: resource, ranges: ranges, priority: priority, account: account, root: root)
        } catch let error as JobError {
            throw fail(error)
        } catch {
            throw fail(.jobFailed, "cannot fetch \(ShownText.escaped(resource)): \(error)")
        }
        if options.json {
            printJSON(
                .object([
                    "resource": .string(resource), "path": .string(outcome.path), "complete": .bool(outcome.complete),
                    "size": outcome.size.map { .int($0) } ?? .null,
                    "ranges": .array(outcome.held.map { .array([.int($0.lowerBound), .int($0.upperBound - 1)]) }),
                ]))
        } else {
            let held = outcome.held.map { "\($0.lowerBound)-\($0.upperBound - 1)" }.joined(separator: ",")
            print("\(outcome.path) \(outcome.complete ? "complete" : "partial") ranges \(held.isEmpty ? "none" : held)")
        }
    }
}
