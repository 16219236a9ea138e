"""Tests of service.html: the HTML reports and the status page."""
