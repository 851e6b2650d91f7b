import Foundation
import MediaBox

/// `CloudClientError`s from the JSON calls MultipartFetch makes through `CloudClient`, as
/// `MultipartFetchError`s naming the resource (no secrets either way).
enum ClientErrors {
    static func mapped<T: Sendable>(_ resourceId: MediaResourceId, offset: Int64, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let e as CloudClientError {
            switch e {
            case let .server(error, _, _):
                throw MultipartFetchError.server(resourceId: resourceId, name: error.name, status: error.code)
            case let .badAnswer(method, _, reason):
                throw MultipartFetchError.badAnswer(resourceId: resourceId, offset: offset, reason: "\(method): \(reason)")
            case let .unavailable(method, _, attempts, underlying):
                throw MultipartFetchError.unavailable(
                    resourceId: resourceId, offset: offset, attempts: attempts,
                    reason: "\(method): \(TransportErrorText.describe(underlying))")
            default:
                throw MultipartFetchError.transport(resourceId: resourceId, reason: e.description)
            }
        }
    }
}
