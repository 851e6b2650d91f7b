import Foundation
import PostboxPostgres
import PostgresNIO

/// Each scheduled fire of a job runs once in the cluster, however many `jobrun schedule`
/// processes see it due: the first to insert the row (job, fire time) in
/// `<prefix>_cluster.fire_claims` runs it (`INSERT … ON CONFLICT DO NOTHING`), the others skip
/// it — the way graphile-worker de-duplicates identical crontabs. Claims older than a week are
/// pruned as new ones are made.
public actor FireClaims {
    private let endpoint: PostgresEndpoint
    private let schema: String
    private let host: String
    private var session: PostgresSession?
    /// Blocking calls run here, never on the cooperative pool.
    private let queue = DispatchQueue(label: "jobrun.fire-claims")

    public init(cluster: PostgresClusterConfig, host: String = ProcessInfo.processInfo.hostName) throws(JobError) {
        self.endpoint = try cluster.endpoint()
        self.schema = "\"\(cluster.schemaPrefix)_cluster\""
        self.host = host
    }

    /// True if this host claimed `job`'s fire at `due` (and should run it); false if another
    /// host already had. A claim that cannot be made (server unreachable) is an error: the
    /// caller skips the fire rather than risk running it twice.
    public func claim(job: String, due: Date) async throws -> Bool {
        let session = Confined(try await self.session())
        let (schema, host) = (self.schema, self.host)
        let ms = Int64((due.timeIntervalSince1970 * 1000).rounded())
        return try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(
                    with: Result {
                        var binds = PostgresBindings()
                        binds.append(job)
                        binds.append(ms)
                        binds.append(host)
                        let rows = try session.value.query(
                            "INSERT INTO \(schema).fire_claims (job, fire_ms, host, claimed_at) VALUES ($1, $2, $3, now()) ON CONFLICT DO NOTHING RETURNING 1",
                            binds)
                        if !rows.isEmpty {
                            try session.value.query("DELETE FROM \(schema).fire_claims WHERE claimed_at < now() - interval '7 days'")
                        }
                        return !rows.isEmpty
                    })
            }
        }
    }

    private func session() async throws -> PostgresSession {
        if let session, !session.isClosed { return session }
        let (endpoint, schema) = (self.endpoint, self.schema)
        let opened: Confined<PostgresSession> = try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(
                    with: Result {
                        let s = try PostgresSession(endpoint: endpoint, name: "postgres:\(schema)")
                        try s.setUp([
                            "CREATE SCHEMA IF NOT EXISTS \(schema)",
                            "CREATE TABLE IF NOT EXISTS \(schema).fire_claims (job text NOT NULL, fire_ms int8 NOT NULL, host text NOT NULL, claimed_at timestamptz NOT NULL, PRIMARY KEY (job, fire_ms))",
                        ])
                        return Confined(s)
                    })
            }
        }
        session = opened.value
        return opened.value
    }
}

/// A value used by one serial queue at a time, handed to it from an actor.
final class Confined<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
