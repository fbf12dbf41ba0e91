extension Array where Element == UInt8 {
    /// `withUnsafeBytes` that keeps the `ImageError` type of what it throws.
    package func withImageBytes<R>(_ body: (UnsafeRawBufferPointer) throws(ImageError) -> R) throws(ImageError) -> R {
        let result: Result<R, ImageError> = withUnsafeBytes { raw in Result { () throws(ImageError) -> R in try body(raw) } }
        return try result.get()
    }
}
