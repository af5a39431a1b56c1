import XCTest
final class PlaceholderCatalogTests: XCTestCase { func testNothing() {} }
