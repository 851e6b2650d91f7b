import CloudProtocol
import Foundation
import XCTest

/// Pure protocol rules: error names, part rules, parent keys, JSON shapes.
final class ProtocolRulesTests: XCTestCase {
    func testErrorNameParsing() {
        XCTAssertEqual(CloudErrorName(parsing: "FILE_MIGRATE_3"), .fileMigrate(3))
        XCTAssertEqual(CloudErrorName(parsing: "FLOOD_WAIT_17"), .floodWait(17))
        XCTAssertEqual(CloudErrorName(parsing: "FILE_PART_5_MISSING"), .filePartMissing(5))
        XCTAssertEqual(CloudErrorName(parsing: "FILE_REFERENCE_EXPIRED"), .fileReferenceExpired)
        XCTAssertEqual(CloudErrorName(parsing: "FILE_MIGRATE_x"), .other("FILE_MIGRATE_x"))
        XCTAssertEqual(CloudErrorName(parsing: "FLOOD_WAIT_"), .other("FLOOD_WAIT_"))
        XCTAssertEqual(CloudErrorName(parsing: "SOMETHING_NEW"), .other("SOMETHING_NEW"))
        for n: CloudErrorName in [
            .fileMigrate(2), .floodWait(1), .filePartMissing(0), .limitInvalid, .offsetInvalid, .fileReuploadNeeded,
            .messageIdInvalid, .peerIdInvalid, .filePartsInvalid, .internalError, .locationInvalid,
        ] {
            XCTAssertEqual(CloudErrorName(parsing: n.rawValue), n)
        }
        XCTAssertEqual(CloudErrorName.fileMigrate(2).httpStatus, 303)
        XCTAssertEqual(CloudErrorName.floodWait(2).httpStatus, 420)
        XCTAssertEqual(CloudErrorName.internalError.httpStatus, 500)
        XCTAssertEqual(CloudErrorName.fileReferenceExpired.httpStatus, 400)
    }

    func testErrorEnvelopeJSON() throws {
        let json = #"{"error":{"code":303,"name":"FILE_MIGRATE_2"}}"#
        let e = try JSONDecoder().decode(CloudErrorEnvelope.self, from: Data(json.utf8))
        XCTAssertEqual(e.error.code, 303)
        XCTAssertEqual(e.error.name, .fileMigrate(2))
        let back = try JSONDecoder().decode(CloudErrorEnvelope.self, from: JSONEncoder().encode(e))
        XCTAssertEqual(back, e)
    }

    func testPartRules() {
        let KiB: Int64 = 1024, MiB: Int64 = 1 << 20
        XCTAssertNil(FilePartRules.validate(offset: 0, limit: 4 * KiB))
        XCTAssertNil(FilePartRules.validate(offset: 0, limit: MiB))
        XCTAssertNil(FilePartRules.validate(offset: 5 * MiB, limit: MiB))
        XCTAssertNil(FilePartRules.validate(offset: MiB - 128 * KiB, limit: 128 * KiB))
        XCTAssertNil(FilePartRules.validate(offset: 12 * KiB, limit: 4 * KiB))
        XCTAssertEqual(FilePartRules.validate(offset: 100, limit: 4 * KiB), .offsetInvalid)
        XCTAssertEqual(FilePartRules.validate(offset: -4096, limit: 4 * KiB), .offsetInvalid)
        XCTAssertEqual(FilePartRules.validate(offset: 0, limit: 3000), .limitInvalid)
        XCTAssertEqual(FilePartRules.validate(offset: 0, limit: 12 * KiB), .limitInvalid, "12 KiB does not divide 1 MiB")
        XCTAssertEqual(FilePartRules.validate(offset: 0, limit: 2 * MiB), .limitInvalid)
        XCTAssertEqual(FilePartRules.validate(offset: 0, limit: 0), .limitInvalid)
        XCTAssertEqual(FilePartRules.validate(offset: MiB - 4 * KiB, limit: 8 * KiB), .limitInvalid, "crosses 1 MiB")
        XCTAssertEqual(FilePartRules.validate(offset: 4 * KiB, limit: MiB), .limitInvalid)
    }

    func testPreferredPartSizes() {
        XCTAssertEqual(FilePartRules.preferredPartSize(fileSize: 100), 4096)
        XCTAssertEqual(FilePartRules.preferredPartSize(fileSize: 10_000), 16384)
        XCTAssertEqual(FilePartRules.preferredPartSize(fileSize: 128 << 10), 128 << 10)
        XCTAssertEqual(FilePartRules.preferredPartSize(fileSize: 5 << 20), 128 << 10)
        XCTAssertEqual(FilePartRules.preferredPartSize(fileSize: 100 << 20), 1 << 20)
        XCTAssertEqual(FilePartRules.preferredPartSize(fileSize: nil), 128 << 10)
        for size: Int64 in [1, 5000, 200_000, 9 << 20, 3 << 30] {
            XCTAssertNil(FilePartRules.validate(offset: 0, limit: FilePartRules.preferredPartSize(fileSize: size)))
        }
        let parts = FilePartRules.parts(covering: 5000..<300_000, partSize: 128 << 10)
        XCTAssertEqual(parts.first?.offset, 0)
        XCTAssertEqual(parts.count, 3)
        XCTAssertTrue(parts.allSatisfy { FilePartRules.validate(offset: $0.offset, limit: $0.limit) == nil })
    }

    func testUploadRules() {
        XCTAssertTrue(UploadPartRules.isValidFullPartSize(128 << 10))
        XCTAssertTrue(UploadPartRules.isValidFullPartSize(512 << 10))
        XCTAssertFalse(UploadPartRules.isValidFullPartSize(1 << 20))
        XCTAssertFalse(UploadPartRules.isValidFullPartSize(3000))
        XCTAssertFalse(UploadPartRules.isBigFile(size: 10 << 20))
        XCTAssertTrue(UploadPartRules.isBigFile(size: (10 << 20) + 1))
        XCTAssertEqual(UploadPartRules.preferredPartSize(fileSize: 1 << 20), 512 << 10)
        XCTAssertEqual(UploadPartRules.preferredPartSize(fileSize: 100 << 20), 512 << 10)
        XCTAssertEqual(UploadPartRules.preferredPartSize(fileSize: 1 << 30), 512 << 10)
        XCTAssertEqual(UploadPartRules.partCount(fileSize: 300_000, partSize: 128 << 10), 3)
    }

    func testParentEntityKeys() throws {
        let all: [ParentEntity] = [
            .message(peerId: 1_000_001, messageId: 5), .peerAvatar(peerId: 7), .stickerSet(id: 500),
            .wallpaper(id: 700), .story(peerId: 1_000_004, storyId: 1),
        ]
        for p in all {
            XCTAssertEqual(ParentEntity(key: p.key), p)
            XCTAssertEqual(try JSONDecoder().decode(ParentEntity.self, from: JSONEncoder().encode(p)), p)
        }
        XCTAssertNil(ParentEntity(key: "message:1"))
        XCTAssertNil(ParentEntity(key: "bogus:1"))
    }

    func testRequestDefaults() throws {
        let h = try JSONDecoder().decode(GetHistoryRequest.self, from: Data(#"{"peerId":5}"#.utf8))
        XCTAssertEqual(h, GetHistoryRequest(peerId: 5, offsetId: 0, minId: 0, limit: 100))
        let d = try JSONDecoder().decode(GetDialogsRequest.self, from: Data("{}".utf8))
        XCTAssertEqual(d, GetDialogsRequest(offset: 0, limit: 100))
        XCTAssertEqual(CloudMethod.getFile.path, "/api/upload.getFile")
    }
}
