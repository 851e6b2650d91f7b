import Foundation
import Postbox
import XCTest

/// The fleet's value encryption: AES-256-GCM, a fresh nonce per value, bound to its row.
final class ValueCipherTests: XCTestCase {
    private let value = Data("a message body with a file reference".utf8)

    func testSealedValuesOpenOnlyInTheirRowWithTheirKey() throws {
        let key = StoreKey.random()
        let cipher = try ValueCipher(storeKey: key)
        let sealed = try cipher.seal(value, table: 3, key: [1, 2, 3])
        XCTAssertEqual(sealed.count, value.count + ValueCipher.overhead)
        XCTAssertNil(sealed.range(of: value), "the plaintext is not in the sealed value")
        XCTAssertEqual(try sealed.withUnsafeBytes { try cipher.open($0, table: 3, key: [1, 2, 3], store: "s") }, value)
        XCTAssertEqual(try ValueCipher(storeKey: key).opens(sealed, table: 3, key: [1, 2, 3]), true, "the derivation is deterministic")

        XCTAssertFalse(cipher.opens(sealed, table: 4, key: [1, 2, 3]), "another table")
        XCTAssertFalse(cipher.opens(sealed, table: 3, key: [1, 2, 4]), "another row")
        XCTAssertFalse(try ValueCipher(storeKey: StoreKey.random()).opens(sealed, table: 3, key: [1, 2, 3]), "another key")
        var altered = sealed
        altered[altered.count / 2] ^= 1
        XCTAssertFalse(cipher.opens(altered, table: 3, key: [1, 2, 3]), "an altered value")
        XCTAssertThrowsError(try value.withUnsafeBytes { try cipher.open($0, table: 3, key: [], store: "pg:x") }) { error in
            XCTAssertTrue("\(error)".contains("pg:x"), "\(error)")
        }
    }

    func testEveryWriteHasAFreshNonce() throws {
        let cipher = try ValueCipher(storeKey: StoreKey.random())
        let first = try cipher.seal(value, table: 1, key: [9])
        let second = try cipher.seal(value, table: 1, key: [9])
        XCTAssertNotEqual(first.subdata(in: 1..<13), second.subdata(in: 1..<13))
        XCTAssertNotEqual(first, second)
        let empty = try cipher.seal(Data(), table: 1, key: [9])
        XCTAssertEqual(try empty.withUnsafeBytes { try cipher.open($0, table: 1, key: [9], store: "s") }, Data())
    }
}
