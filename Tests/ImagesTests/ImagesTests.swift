import Images
import TestSupport
import XCTest

/// libvips makes the gate's photos: a school's large photo becomes a small
/// JPEG of at most the asked size, never larger, without its metadata.
final class ImagesTests: XCTestCase {
    func testASchoolSizePhotoBecomesASmallJPEGThatFitsTheBox() throws {
        let photo = PNG.noisy(width: 1200, height: 1600, comment: "taken at 3 Hanbit-ro")
        XCTAssertGreaterThan(photo.count, 1_000_000, "a large photo to begin with")
        let small = try Images.smallerJPEG(photo, width: 300, height: 400, quality: 70)
        XCTAssertEqual(Array(small.prefix(3)), [0xFF, 0xD8, 0xFF], "a JPEG")
        XCTAssertEqual(jpegSize(small)?.width, 300)
        XCTAssertEqual(jpegSize(small)?.height, 400)
        XCTAssertLessThanOrEqual(small.count, 60_000, "noise is the worst case for JPEG; a face is a fraction of it")
        XCTAssertNil(String(decoding: small, as: UTF8.self).range(of: "Hanbit"), "the photo's metadata stays behind")

        // A landscape photo fits by its width; a small one is never enlarged.
        let wide = try Images.smallerJPEG(PNG.noisy(width: 1600, height: 1200), width: 300, height: 400, quality: 70)
        XCTAssertEqual(jpegSize(wide).map { [$0.width, $0.height] }, [300, 225])
        let again = try Images.smallerJPEG(small, width: 600, height: 800, quality: 70)
        XCTAssertEqual(jpegSize(again).map { [$0.width, $0.height] }, [300, 400])
    }

    func testWhatIsNoPhotoIsRefusedWithTheReason() {
        let svg = Array(#"<svg xmlns="http://www.w3.org/2000/svg" width="900" height="1200"><rect width="900" height="1200"/></svg>"#.utf8)
        for bytes in [[], Array("not an image".utf8), svg, Array(PNG.noisy(width: 64, height: 64).prefix(200))] {
            XCTAssertThrowsError(try Images.smallerJPEG(bytes, width: 300, height: 400, quality: 70)) { error in
                XCTAssertFalse("\(error)".isEmpty)
            }
        }
    }
}
