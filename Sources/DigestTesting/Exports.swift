// The tests that use the fake servers import DigestTesting alone.
@_exported public import DigestFakes
