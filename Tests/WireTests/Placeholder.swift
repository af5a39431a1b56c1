import XCTest
final class PlaceholderWireTests: XCTestCase { func testNothing() {} }
