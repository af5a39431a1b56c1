import XCTest
final class PlaceholderSharedLibTests: XCTestCase { func testNothing() {} }
