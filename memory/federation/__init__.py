"""Federation: private, shared and global tiers that degrade instead of failing."""
