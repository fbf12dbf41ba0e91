/// The shape of a notification.
public enum Variant: String, Sendable, Hashable, CaseIterable, Codable {
    /// Header line plus bullets of picked articles.
    case bigText = "BigText"
    /// The top pick's picture with a one-line body.
    case image = "Image"
    /// Title and one short body.
    case defaultText = "Default"
}

/// How to choose between the Image and BigText variants when both are possible.
public enum VariantPolicy: Sendable, Hashable {
    case preferImage
    case preferText
    /// A deterministic A/B split by a hash of user and week: this percentage gets images.
    case split(imagePercent: Int)

    /// Parses `image`, `text` or `split:50`.
    public init?(argument: String) {
        switch argument {
        case "image", "prefer-image": self = .preferImage
        case "text", "prefer-text": self = .preferText
        default:
            guard argument.hasPrefix("split"), let value = Int(argument.drop(while: { !$0.isNumber })),
                (0...100).contains(value)
            else { return nil }
            self = .split(imagePercent: value)
        }
    }
}
