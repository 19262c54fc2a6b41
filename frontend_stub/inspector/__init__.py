"""`orion inspect`: a local web page that follows a session's hooks live, or looks back at an ended session's."""
