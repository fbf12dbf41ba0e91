/// A user of the reading app, as the weekly run sees them.
public struct Reader: Sendable, Hashable {
    /// The app's own user id.
    public var id: String
    /// BCP 47 locale, for example `pl-PL`.
    public var locale: String
    /// IANA time zone, for example `Europe/Warsaw`.
    public var timeZone: String
    /// A user who opted out receives nothing.
    public var optedOut: Bool
    /// The devices the user's notifications go to: as the stores read them, at most
    /// ``DeviceSelection/limit``, in ``DeviceSelection`` order.
    public var devices: [Device]
    /// Devices left out of ``devices`` because FCM called their token unregistered (and the app has
    /// not registered it again since): counted as `dead_token` in the run's report.
    public var deadTokens = 0
    /// Live devices left out of ``devices`` because the reader has more than
    /// ``DeviceSelection/limit``: counted as `over_limit` in the run's report.
    public var devicesOverLimit = 0

    public init(id: String, locale: String, timeZone: String, optedOut: Bool, devices: [Device]) {
        self.id = id
        self.locale = locale
        self.timeZone = timeZone
        self.optedOut = optedOut
        self.devices = devices
    }
}

/// One registered device of a user.
public struct Device: Sendable, Hashable {
    /// The token the provider knows the device by: an FCM registration token, or an APNs device token
    /// (lower-case hex). Never logged whole: use ``maskedToken``.
    public var token: String
    public var platform: Platform
    /// When the app last registered the token (Unix seconds; `nil`: not said). A token FCM called
    /// unregistered is alive again once registered after that; of a token listed under several
    /// readers, the latest registration wins.
    public var registeredAt: Int64?
    /// The app's bundle id, a direct APNs request's `apns-topic`, for publishers with several apps
    /// (`nil`: ``APNsEncoder/Configuration/topic``).
    public var topic: String?
    /// The push service the device's messages go through.
    public var provider: Provider

    public init(token: String, platform: Platform, registeredAt: Int64? = nil, topic: String? = nil, provider: Provider = .fcm) {
        self.token = token
        self.platform = platform
        self.registeredAt = registeredAt
        self.topic = topic
        self.provider = provider
    }

    /// The token shortened for logs and errors: its last four characters.
    public var maskedToken: String { Self.masked(token) }

    /// Any token shortened so: `…` and its last four characters.
    package static func masked(_ token: String) -> String { "…" + String(token.suffix(4)) }
}
