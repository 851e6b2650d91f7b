import Foundation

extension AdaptiveConcurrency {
    /// Runs `body` for every item, as many at once as the limit allows at each moment, and
    /// returns the results in the items' order. Each call returns its result and the bytes it
    /// moved, which the limit follows (`completed(bytes:windowFull:)`; the window counts as full
    /// while items are still waiting). The first failure cancels the rest and is thrown.
    public func map<Item: Sendable, Result: Sendable>(
        _ items: [Item], _ body: @escaping @Sendable (Item) async throws -> (Result, bytes: Int64)
    ) async throws -> [Result] {
        var results = [Result?](repeating: nil, count: items.count)
        try await withThrowingTaskGroup(of: (Int, Result, Int64).self) { group in
            var next = 0
            var running = 0
            func start() {
                while running < limit, next < items.count {
                    let index = next
                    let item = items[index]
                    next += 1
                    running += 1
                    group.addTask {
                        let (result, bytes) = try await body(item)
                        return (index, result, bytes)
                    }
                }
            }
            start()
            while running > 0, let (index, result, bytes) = try await group.next() {
                running -= 1
                results[index] = result
                completed(bytes: bytes, windowFull: next < items.count)
                start()
            }
        }
        return results.map { $0! }
    }
}
