/// Why an image could not be used: a stable code (recorded on the message and counted in the run
/// summary), a human message, and the context that locates the fault (URL, C return code, sizes).
public struct ImageError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The kind of failure; its `reason` is the short text recorded on messages (`http_404`, `truncated`).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let reason: String
        private init(_ reason: String) { self.reason = reason }

        public var description: String { reason }

        /// The URL is not http or https, or cannot be parsed.
        public static let badURL = Code("bad_url")
        /// The host did not resolve.
        public static let dnsFailed = Code("dns_failed")
        /// The address is loopback, private, link-local, unspecified, mapped or otherwise internal and
        /// not in `--allow-hosts`.
        public static let addressRefused = Code("address_refused")
        /// Could not connect, or the connection broke.
        public static let connectFailed = Code("connect_failed")
        /// The connect or total time limit passed.
        public static let timeout = Code("timeout")
        /// More redirects than allowed (a loop ends here too).
        public static let tooManyRedirects = Code("too_many_redirects")
        /// A redirect without a usable Location.
        public static let badRedirect = Code("bad_redirect")
        /// The body is larger than the download cap.
        public static let tooLarge = Code("too_large")
        /// The response body is empty.
        public static let empty = Code("empty_body")
        /// The bytes are HTML, text or something else that is no image.
        public static let notAnImage = Code("not_an_image")
        /// WebP, SVG and other image types no target platform takes as an attachment.
        public static let unsupportedType = Code("unsupported_type")
        /// The image claims more pixels than allowed (checked before decoding pixels).
        public static let tooManyPixels = Code("too_many_pixels")
        /// Width or height is zero.
        public static let zeroSize = Code("zero_size")
        /// The file ends before the image does.
        public static let truncated = Code("truncated")
        /// The decoder rejected the data.
        public static let corrupt = Code("corrupt")
        /// No quality setting brings the rendition under its byte limit.
        public static let renditionTooLarge = Code("rendition_too_large")
        /// Writing the rendition file failed.
        public static let storeFailed = Code("store_failed")
        /// An HTTP status other than 200.
        public static func httpStatus(_ status: Int) -> Code { Code("http_\(status)") }
    }

    public let code: Code
    /// What went wrong, for a person.
    public let message: String
    /// Where: the URL, the C library's return code, the sizes involved.
    public var context: [String: String]

    public init(_ code: Code, _ message: String, context: [String: String] = [:]) {
        self.code = code
        self.message = message
        self.context = context
    }

    /// The short text recorded on messages and counted in the summary.
    public var reason: String { code.reason }

    public var description: String {
        let where_ = context.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return where_.isEmpty ? "\(code): \(message)" : "\(code): \(message) (\(where_))"
    }

    /// The same error with more context.
    func adding(_ key: String, _ value: String) -> ImageError {
        var copy = self
        copy.context[key] = value
        return copy
    }
}
