import XCTest
final class PlaceholderIntegrationTests: XCTestCase { func testNothing() {} }
