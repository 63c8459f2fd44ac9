# Fills a public-inbox v2 inbox with N mails for no lab: two of three
# discussion, one a patch to a file no lab measures, through public-inbox's own writer
# (PublicInbox::V2Writable, what public-inbox-mda and -learn use), in one
# process: one public-inbox-mda per mail would take most of an hour.
#   perl bench/watch-scan.pl INBOX N
use strict;
use PublicInbox::Config;
use PublicInbox::InboxWritable;
use PublicInbox::V2Writable;
use PublicInbox::Eml;
my ($dir, $n) = @ARGV;
my $ibx = PublicInbox::InboxWritable->new({ inboxdir => $dir, name => 'list', version => 2, address => ['list@example.org'], indexlevel => 'basic' });
my $w = PublicInbox::V2Writable->new($ibx);
for my $i (1..$n) {
	# Two of three are discussion; one is a patch to a file no lab
	# measures, which lab watch reads whole, keeps and skips.
	my $text = "From: Dev $i <dev$i\@example.org>\nTo: list\@example.org\nMessage-ID: <m$i\@example.org>\nDate: Thu, 03 Dec 2026 10:00:00 +0000\n";
	if ($i % 3) {
		$text .= "Subject: Re: a discussion $i\n\nsome text $i\n";
	} else {
		$text .= "Subject: [PATCH] mm: fix comment $i\n\nA comment.\n---\n mm/f$i.c | 2 +-\n 1 file changed\n\n"
			. "diff --git a/mm/f$i.c b/mm/f$i.c\n--- a/mm/f$i.c\n+++ b/mm/f$i.c\n\@\@ -1,3 +1,3 \@\@\n a\n-b\n+c\n d\n";
	}
	$w->add(PublicInbox::Eml->new($text)) or die "add $i";
}
$w->done;
