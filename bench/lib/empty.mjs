// Intentionally empty: bench/profile-sdk-start.js times importing a module that does nothing.
