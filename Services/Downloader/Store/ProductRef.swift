/// A product's token and its actual product id, as the `downloads` events name a product.
struct ProductRef: Sendable, Equatable {
    var token: String
    var productId: String
    /// Why the product failed, when it did (a presentation's file is named in it).
    var reason: String? = nil
}
