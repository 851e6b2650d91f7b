import Foundation

/// In-process deduplication of fetches: concurrent requests for one resource await the same
/// task, so the injected fetcher runs once. (Across processes the partial file's lock does it.)
actor FetchCoordinator {
    private var tasks: [MediaStorageKey: Task<MediaResourceData, any Error>] = [:]

    func run(_ key: MediaStorageKey, _ operation: @escaping @Sendable () async throws -> MediaResourceData) async throws -> MediaResourceData {
        if let existing = tasks[key] { return try await existing.value }
        let task = Task { try await operation() }
        tasks[key] = task
        defer { tasks[key] = nil }
        return try await task.value
    }
}
