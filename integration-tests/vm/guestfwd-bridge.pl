#!/usr/bin/perl
# One guest connection to the host's 127.0.0.1:PORT: qemu's guestfwd runs this per connection the guest opens to
# $NVMEOF4J_HOST_ADDR:PORT (run-guest.sh --guestfwd), with that connection as stdin and stdout.
#
#   guestfwd-bridge.pl PORT
#
# It copies both ways, one process per direction, and when either direction ends (a FIN, or an error) it closes
# both, so each side sees the other close.
#
# Why not two cats: libslirp hands the guest's connection over a loopback TCP socket of its own that keeps Nagle
# on. It writes each of the guest's segments as it arrives, so after the first 1,460 bytes of a capsule the rest
# waits for our ACK of them, and a copier that also answers on that socket has its ACKs delayed (about 40 ms). Every
# NVMe/TCP command with more than one segment of data (a 4 KiB write with in-capsule data, every H2CData) then
# waited about 40 ms: 20 IOPS at QD1. Asking for an immediate ACK (TCP_QUICKACK, 12 in linux/tcp.h) after each read
# releases the rest at once. Towards the host both directions set TCP_NODELAY.
use strict;
use warnings;
use Socket qw(PF_INET SOCK_STREAM IPPROTO_TCP TCP_NODELAY inet_aton pack_sockaddr_in);

my $TCP_QUICKACK = 12;
my $port = shift;
die "usage: guestfwd-bridge.pl PORT\n" unless defined $port && $port =~ /^\d+$/ && $port >= 1 && $port <= 65535;

socket(my $host, PF_INET, SOCK_STREAM, 0) or exit 1;
connect($host, pack_sockaddr_in($port, inet_aton('127.0.0.1'))) or exit 1;
setsockopt($host, IPPROTO_TCP, TCP_NODELAY, 1);
setsockopt(STDOUT, IPPROTO_TCP, TCP_NODELAY, 1); # stdin and stdout are one socket (fails harmlessly on a pipe)

sub copy { # copy(FROM, TO, QUICKACK): until FROM ends or TO fails
    my ($from, $to, $quickack) = @_;
    my $buf;
    while (1) {
        my $n = sysread($from, $buf, 256 * 1024);
        return unless $n;
        setsockopt($from, IPPROTO_TCP, $TCP_QUICKACK, 1) if $quickack;
        for (my $off = 0; $off < $n;) {
            my $w = syswrite($to, $buf, $n - $off, $off);
            return unless defined $w;
            $off += $w;
        }
    }
}

my $child = fork;
exit 1 unless defined $child;
if ($child == 0) {
    copy($host, \*STDOUT, 0); # the host's answers to the guest
    exit 0;
}
$SIG{CHLD} = sub { exit 0 };  # the host side ended: close the guest's side too
copy(\*STDIN, $host, 1);      # the guest's commands and data to the host
kill 'TERM', $child;
exit 0;
