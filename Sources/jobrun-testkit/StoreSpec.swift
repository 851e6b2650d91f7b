import Foundation
import Postbox
import PostboxPostgres

/// Opens the Postbox a testkit command names: an SQLite file path, `encrypted:<key file>:<path>`
/// for an encrypted one (the key file holds the key's 32 bytes), or
/// `pg:<socket path>:<user>:<database>:<schema>` for a store on a PostgreSQL server reached
/// over its Unix socket (test servers trust the socket: no password is ever passed).
func openPostbox(_ spec: String, readOnly: Bool = false, conversion: MessageRecordConversion = MessageRecordConversion()) throws -> Postbox {
    if spec.hasPrefix("encrypted:") {
        let parts = spec.dropFirst(10).split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2, let bytes = FileManager.default.contents(atPath: parts[0]) else { throw TestkitError.usage("encrypted:<key file>:<path>") }
        return try Postbox(path: parts[1], readOnly: readOnly, key: try StoreKey(rawBytes: [UInt8](bytes)), conversion: conversion)
    }
    guard spec.hasPrefix("pg:") else { return try Postbox(path: spec, readOnly: readOnly, conversion: conversion) }
    let parts = spec.dropFirst(3).split(separator: ":", omittingEmptySubsequences: false).map(String.init)
    guard parts.count == 4 else { throw TestkitError.usage("pg:<socket path>:<user>:<database>:<schema>") }
    let endpoint = PostgresEndpoint(address: .unixSocket(path: parts[0]), username: parts[1], database: parts[2])
    let box = try PostgresValueBox(endpoint: endpoint, schema: parts[3], readOnly: readOnly)
    return try Postbox(valueBox: box, name: "postgres:\(parts[3])", readOnly: readOnly, conversion: conversion)
}
