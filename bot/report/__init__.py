"""What people read: text, JSON, markdown, and findings grouped for a reviewer."""
