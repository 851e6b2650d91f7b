import CloudCore
import ConfinedFiles
import Foundation
import Synchronization
import TestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// A staged upload swapped, after it was staged, for a link to another file of the same size
/// and modification time: not one byte of that file is sent. The staged file is opened once,
/// beneath its folder, without following a link, and a file with several links is re-hashed.
final class StagedFileSwapTests: XCTestCase {
    /// Gives `path` the modification time (to the nanosecond) of `model`.
    private func copyModificationTime(from model: String, to path: String) {
        var st = stat()
        XCTAssertEqual(stat(model, &st), 0)
        XCTAssertEqual(utimensat(AT_FDCWD, path, [st.st_atim, st.st_mtim], AT_SYMLINK_NOFOLLOW), 0)
    }

    func testAStagedFileSwappedForALinkToAnotherFileSendsNoByteOfIt() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let sent = Mutex(0)
        for swap in ["symbolic link", "hard link"] {
            let item = try await f.queue.enqueue(UploadRequest(path: try f.makeFile("staged-\(swap.count).bin", size: 300_000), peerId: f.peer, staging: .copy))
            let secret = try f.makeFile("secret-\(swap.count).bin", size: 300_000)
            copyModificationTime(from: item.stagedPath, to: secret)
            XCTAssertEqual(unlink(item.stagedPath), 0)
            XCTAssertEqual(swap == "symbolic link" ? symlink(secret, item.stagedPath) : link(secret, item.stagedPath), 0)
            if swap == "hard link" { copyModificationTime(from: secret, to: item.stagedPath) }
            let upload = f.upload { _ in
            } observer: { event in
                if case .partSent = event { sent.withLock { $0 += 1 } }
            }
            await XCTAssertThrowsUploadError(try await upload.upload(itemId: item.id)) { error in
                switch (swap, error) {
                case ("symbolic link", .fileUnreadable(let path, let reason)):
                    return path == item.stagedPath && reason.contains("symbolic link")
                case ("hard link", .fileChanged(_, let reason)):
                    return reason.contains("SHA-256")
                default:
                    return false
                }
            }
            XCTAssertEqual(sent.withLock { $0 }, 0, "\(swap): no part of the other file was sent")
        }
    }

    /// A hard-linked staged file written in place through its other name, its modification
    /// time then set back: the change time recorded at staging no longer matches, so the file
    /// is hashed again and no byte of the new content is sent. Unchanged, the same kind of item
    /// is sent without that hash (its inode and change time stand for the bytes hashed).
    func testALinkedFileWrittenInPlaceWithItsModificationTimeSetBackSendsNoByte() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let source = try f.makeFile("linked.bin", size: 300_000)
        let item = try await f.queue.enqueue(UploadRequest(path: source, peerId: f.peer, staging: .link))
        XCTAssertEqual(item.staging, .link)
        XCTAssertNotNil(item.stagedInode, "a linked file's inode is recorded")
        XCTAssertNotNil(item.stagedChangeTimeNs)
        var before = stat()
        XCTAssertEqual(stat(source, &before), 0)
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: source))
        try h.write(contentsOf: Data(repeating: 0x5A, count: 4096))
        try h.close()
        XCTAssertEqual(utimensat(AT_FDCWD, source, [before.st_atim, before.st_mtim], 0), 0)
        let sent = Mutex(0)
        let upload = f.upload { _ in
        } observer: { event in
            if case .partSent = event { sent.withLock { $0 += 1 } }
        }
        await XCTAssertThrowsUploadError(try await upload.upload(itemId: item.id)) { error in
            if case .fileChanged(_, let reason) = error { return reason.contains("SHA-256") }
            return false
        }
        XCTAssertEqual(sent.withLock { $0 }, 0, "no byte of the rewritten file was sent")

        let unchanged = try await f.queue.enqueue(UploadRequest(path: try f.makeFile("kept-linked.bin", size: 300_000), peerId: f.peer, staging: .link))
        let result = try await f.upload().upload(itemId: unchanged.id)
        XCTAssertEqual(try f.storedBytes(documentId: result.documentId), try Data(contentsOf: URL(fileURLWithPath: unchanged.stagedPath)))
    }

    /// The staging folder itself swapped for a link to another folder, after the sender was
    /// given it open (as `upload-queue` is, once the run has checked the root): the file is read
    /// through the folder's descriptor, so the staged bytes are sent; following the link would
    /// find the other folder's file of the same name (and a different size) and fail the item.
    func testAStagingFolderSwappedForALinkIsNotFollowed() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let item = try await f.queue.enqueue(UploadRequest(path: try f.makeFile("kept.bin", size: 300_000), peerId: f.peer, staging: .copy))
        let folder = (item.stagedPath as NSString).deletingLastPathComponent
        let held = try ConfinedDirectory.open(path: folder)

        let elsewhere = f.directory.file("elsewhere")
        XCTAssertEqual(mkdir(elsewhere, 0o700), 0)
        let decoy = elsewhere + "/" + (item.stagedPath as NSString).lastPathComponent
        XCTAssertEqual(rename(try f.makeFile("decoy.bin", size: 200_000), decoy), 0)
        XCTAssertEqual(rename(folder, f.directory.file("moved-away")), 0)
        XCTAssertEqual(symlink(elsewhere, folder), 0)

        let sent = Mutex(0)
        let upload = MultipartUpload(client: f.client, postbox: f.postbox, uploads: held) { event in
            if case .partSent = event { sent.withLock { $0 += 1 } }
        }
        let result = try await upload.upload(itemId: item.id)
        XCTAssertGreaterThan(sent.withLock { $0 }, 0)
        let stored = try await f.item(item.id)
        XCTAssertEqual(stored.state, .sent)
        XCTAssertEqual(result.bytesSent, 300_000, "the staged file's bytes, read through the held folder")
    }
}
