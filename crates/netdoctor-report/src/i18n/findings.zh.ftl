# 每个发现（finding）的摘要、解释和修复建议（简体中文）。
#
# 消息 id：<finding id>-summary / -explanation / -fix（finding id 保持英文，是 JSON 契约）。
# 以 common- 开头的是共用片段。可用参数（全部总会提供）：
#   $side         server | client | network | host（需要修改的一方）
#   $severity     critical | warning | info；$critical  yes | no
#   $latency      每个受影响请求增加的延迟，如 "43.8 ms"；$has_latency  yes | no
#   $pct          受影响请求的百分比，如 "95"；$has_pct  yes | no
#   $conns        作为证据的连接数
#   $counter      第一个计数器证据的名字；$counter_delta 其变化，如 "+42"；$has_counter  yes | no
#   $probe        第一个探测证据的名字
#   $caused_by    根因的 finding id（没有时为空）；$has_caused_by  yes | no
#   $option $value  第一个套接字选项证据；$has_option  yes | no
#   $silent $silent_rcv  retransmission_timeout 的接收方沉默（见该节）；$dns_all_silent  yes | no（见 dns_server_unreachable）
# 术语：延迟确认（delayed ACK）、Nagle 算法、重传、零窗口、全连接队列/半连接队列（accept/SYN
# queue）、连接跟踪表（conntrack）。

# 名字的第一个地址失败、其余地址各试了一次 connect()（证据 other_addresses）时，接在该发现的文字后面。
common-other-addrs-live-summary = ；这个名字还有其他地址接受连接：失败的是名字记录中的一个失效地址
common-other-addrs-live-explanation = {" "}这个名字解析出多个地址，解析器把失败的地址排在第一位，而其他地址中有接受连接的（见证据），所以服务本身是正常的，错在名字的记录里有一个失效地址。先尝试它的客户端要么等连接超时（被拒绝时则立即）再改用下一个地址，要么直接失败；哪些客户端会碰上取决于它们的解析器返回的顺序（轮询 DNS 会轮换）。本次运行在这里停止，没有对正常的地址加负载。
common-other-addrs-live-fix = 从名字的记录（DNS 的 A/AAAA 记录或 /etc/hosts 中的那一行）中删除失败的地址，或者让它恢复；用 `getent ahosts 名字` 复查，并在 URL 中写正常的地址（加上 Host 头）直接诊断它。对失败的地址本身：
common-other-addrs-none-summary = ；这个名字的其他地址也都不接受连接
common-other-addrs-none-explanation = {" "}这个名字解析出多个地址，本次运行也试了其余的地址，没有一个接受连接（见证据）：从这里看，服务在所有地址上都不可达，而不只是第一个地址。

common-who = { $side ->
    [client] 客户端
    [network] 网络
    [host] 主机
   *[server] 服务端
}
common-peer = { $side ->
    [client] 服务端
   *[server] 客户端
}
common-impact = { $has_latency ->
    [yes] 每个受影响的请求增加约 { $latency }{ $has_pct ->
        [yes] ，影响 { $pct }% 的请求
       *[no] {""}
    }
   *[no] { $has_pct ->
        [yes] 影响 { $pct }% 的请求
       *[no] 影响见下方证据
    }
}
common-counter = { $has_counter ->
    [yes] 计数器 { $counter } 在运行期间变化了 { $counter_delta }。
   *[no] {""}
}

# 分组证据下的说明（$delay、$hold 为毫秒数，$bytes 为字节数）
common-note-nagle = 延迟确认：ACK 在 { $delay } ms 后才到；被扣住的 { $bytes } 字节在它之后 { $hold } ms 发出
common-note-delayed-ack = 延迟确认：ACK 在 { $delay } ms 后才到；下一个 { $bytes } 字节的分段在它之后 { $hold } ms 发出

## nagle_delayed_ack

nagle_delayed_ack-summary = { common-who }的 Nagle 算法在等待{ common-peer }的延迟确认：{ common-impact }
nagle_delayed_ack-explanation = { $side ->
    [client] 客户端把每个请求分成两次写入（例如先写请求头，再写请求体）。Nagle 算法开启时（TCP_NODELAY 关闭），第一段数据还未被确认，内核就会扣住第二段小数据不发。服务端收到的请求不完整，无法回复，于是延迟确认（Linux 至少等 40 ms）。双方互相等待，直到服务端的延迟确认定时器到期：每个受影响的请求因此变慢。
   *[other] 服务端把每个响应分成两次写入（例如先写响应头，再写响应体）。Nagle 算法开启时（TCP_NODELAY 关闭），第一段数据还未被确认，内核就会扣住第二段小数据不发。客户端想把 ACK 捎带在自己的数据上，于是延迟确认（Linux 至少等 40 ms），但在响应收完之前它没有数据可发。双方互相等待，直到客户端的延迟确认定时器到期：每个受影响的请求因此变慢。抓包中的特征：一个响应分段，约 40 ms 后客户端发来一个单独的 ACK，紧接着这个 ACK 发出响应的剩余部分。
}
nagle_delayed_ack-fix = { $side ->
    [client] 在客户端的套接字上开启 TCP_NODELAY（多数 HTTP 客户端库都有这个选项），或者把每个请求一次写完（writev / TCP_CORK）。
   *[other] 在服务端的套接字上开启 TCP_NODELAY（nginx：`tcp_nodelay on;`，默认即开启），或者把每个响应一次写完（writev / TCP_CORK）。nginx 的 `tcp_nopush on;`（在 sendfile 周围使用 TCP_CORK）也会让响应头和响应体一起发出；只有当响应头和响应体分两次写出时（`sendfile on` 且 `tcp_nopush off`），`tcp_nodelay off` 才会造成影响。
}

## delayed_ack_stall

delayed_ack_stall-summary = { common-peer }必须等{ common-who }的延迟确认才能继续发送：{ common-impact }
delayed_ack_stall-explanation = { common-peer }还有数据要发，但不被允许：拥塞窗口或{ common-who }的接收窗口允许的数据都已在途，只有{ common-who }的 ACK 才能让它继续，而{ common-who }延迟了这个 ACK（Linux 对单个分段的确认至少延迟 40 ms，希望捎带在数据上）。迟到的 ACK 一到，下一个满长分段立即发出：每次传输都停顿了一段时间。与 nagle_delayed_ack 不同，这里开启 TCP_NODELAY 没有用。
delayed_ack_stall-fix = 给{ common-peer }留出余地，别让一个 ACK 成为唯一的前进方式：在{ common-who }上使用更大的接收缓冲区（不要把 SO_RCVBUF 固定得很小），或者让{ common-who }立即确认（每次读之后设置 TCP_QUICKACK，或对该路由使用 `ip route ... quickack 1`）。

## packet_loss_retransmission

# $probe 为 ip_id_skip：原始分段在到达抓包点之前就丢了（抓包里没有它），只能从发送方 IPv4 id 的跳号看出；重传看起来像新数据，tshark 也不标记。
# $probe 为 ip_id_skip_some：只有一部分重传是这样。
packet_loss_retransmission-summary = { $probe ->
    [ip_id_skip] 抓包点之前的丢包：分段在到达抓包点前丢失后被重传（只能从发送方 IPv4 id 的跳号看出）：{ common-impact }
   *[other] 丢包与重传：{ common-impact }
}
packet_loss_retransmission-explanation = { $probe ->
    [ip_id_skip] 分段在到达抓包点之前就丢失了：在发送方主机上，或在它与抓包点之间。抓包从未看到原始分段，所以其中没有任何包被标记为重传（tshark 也不标记）；但发送方的 IPv4 id（Linux 上每个包加一）跳过了一个号，紧接着的数据就是被重传的那个分段。它是发送方最后要发的数据，后面没有分段能让接收方报告缺口，所以发送方要等到接收方对前面数据的延迟确认到达（或定时器到期）才重传。这种等待看起来像 Nagle 算法在等延迟确认，但 TCP_NODELAY 改变不了它：原因是丢包。IPv6 没有 id，无法这样分辨。{ common-counter }
    [ip_id_skip_some] 有分段在路上丢失，发送方通过快速重传（重复 ACK / SACK）补发。每次丢包都要多等至少一个往返时间，拥塞窗口也会减半，传输随之变慢。{ common-counter }丢包可能发生在网卡、交换机、路由器，或者被防火墙、限速规则丢弃。其中一部分重传的原始分段在到达抓包点之前就丢了：抓包没有看到它们，只能从发送方 IPv4 id 的跳号看出。
   *[other] 有分段在路上丢失，发送方通过快速重传（重复 ACK / SACK）补发。每次丢包都要多等至少一个往返时间，拥塞窗口也会减半，传输随之变慢。{ common-counter }丢包可能发生在网卡、交换机、路由器，或者被防火墙、限速规则丢弃。
}
packet_loss_retransmission-fix = { $probe ->
    [ip_id_skip] 在抓包点之前、发送方一侧找出丢包的位置：它的接口和队列丢包（`ip -s link`、`tc -s qdisc`）、它主机上的防火墙规则或限速（`iptables -L -v -n`、`nft list ruleset`）、它的重传计数（`nstat -az TcpRetransSegs TcpExtTCPLossProbes`），以及它与抓包点之间的链路。在发送方主机上抓包可以看到原始分段发出。
   *[other] 找出丢包的位置：两端的 `nstat -az`（TcpRetransSegs、TcpExtTCPLostRetransmit）、`ip -s link`（接口的 drop/error），沿路径用 `mtr` 逐跳查看丢包；检查限速、队列溢出和防火墙规则。
}

## retransmission_timeout

# $silent（接收方沉默，detect::loss::silent）：forgot 接收方的主机最后用不确认任何数据的 RST 回答（连接在它那里已经没有了）；near 抓包点在沉默的接收方旁边；far 抓包点在发送方旁边（接收方沉默或路径丢弃一切）；some 只有部分超时如此；none 普通的丢包。$silent_rcv 是沉默的一方（client | server）。
common-silent-rcv = { $silent_rcv ->
    [client] 客户端
   *[server] 服务端
}
common-silent-snd = { $silent_rcv ->
    [client] 服务端
   *[server] 客户端
}
common-silent-common = { common-silent-snd }按重传定时器一再重发它最早未确认的数据，每次等待的时间翻倍，而{ common-silent-rcv }什么也没有发回：没有确认，没有重复 ACK，没有窗口更新，尽管它在同一个连接上曾经确认过{ common-silent-snd }的数据。正常工作的 TCP 协议栈无论应用在做什么都会确认收到的每个分段（应用不再读取时表现为零窗口，而不是沉默）。
retransmission_timeout-summary = { $silent ->
    [forgot] { common-silent-rcv }不再确认任何数据：{ common-silent-snd }的重传定时器一再到期，随后{ common-silent-rcv }的主机用一个不确认任何数据的 RST 作答，这是主机对它已经没有的连接的回答：分段到达了它，连接在那里已经不存在了，不是路径丢包；{ common-impact }
    [near] { common-silent-rcv }不再确认任何数据：{ common-silent-snd }的重传定时器一再到期；抓包点在{ common-silent-rcv }旁边，看得到这些重传到达，但{ common-silent-rcv }一个也没有回答：不是路径丢包；{ common-impact }
    [far] { common-silent-rcv }不再确认任何数据，或者到它的路径丢弃了一切：{ common-silent-snd }的重传定时器一再到期，{ common-silent-rcv }没有任何回应；{ common-impact }
    [some] 重传超时（RTO）造成停顿：{ common-impact }；其中一些连接上{ common-silent-rcv }随后完全没有应答（见证据：不是丢包）
   *[none] 重传超时（RTO）造成停顿：{ common-impact }
}{ $severity ->
    [info] ；没有请求在进行中（重发的数据在连接的最后一次交换结束之后）：没有请求因此等待
   *[other] {""}
}
retransmission_timeout-explanation = { $silent ->
    [forgot] { common-silent-common }随后从{ common-silent-rcv }的地址来了一个不带 ACK 标志的 RST，它的序号取自{ common-silent-snd }的确认号：这是 TCP 协议栈对它不认识的连接的分段的回答（RFC 9293）。所以{ common-silent-snd }的分段到达了{ common-silent-rcv }的主机，而连接已经在那里被丢弃，没有发出 FIN 或 RST：它的应用被挂起或被杀死、套接字被丢弃（移动系统会这样对待转入后台的应用），主机重启或换了网络，或者它前面的防火墙或 NAT 忘记了这条流并代它作答。这些重传是{ common-silent-snd }在等待一个已经不存在的连接，不是路径丢包。
    [near] { common-silent-common }抓包点在{ common-silent-rcv }旁边（握手中它自己那一段较短），所以这些分段到达了{ common-silent-rcv }的主机：路径把它们送到了。要么{ common-silent-rcv }的主机停止了发送（挂起、被暂停、断网，或者它上面的防火墙丢弃了它发出的分组），要么抓包从那时起没有记录{ common-silent-rcv }发出的分组；仅凭分组无法区分这两种情况。这些重传是{ common-silent-snd }在等待一个不回答的对端，不是路径丢包；之后{ common-silent-snd }发出的 RST 是它的重传次数用尽而放弃（Linux：net.ipv4.tcp_retries2，约 15 分钟；其他协议栈更早放弃）。
    [far] { common-silent-common }抓包点在{ common-silent-snd }旁边（或者没有抓到能说明位置的握手），所以只看得到重传发出，看不到是否到达：沉默的{ common-silent-rcv }（挂起、消失、断网）与双向丢弃一切的路径在这里看起来一样。
    [some] 丢失的分段没有被快速重传补上（后面没有足够的数据触发重复 ACK），发送方只能等重传定时器到期（Linux 至少 200 ms，之后每次翻倍）。这样的一次停顿就会让请求慢上几百毫秒甚至几秒。{ common-counter }如果丢的是连接建立阶段的包，原因常常是服务端的全连接队列已满。 证据中有些连接不同：定时器开始到期之后，{ common-silent-rcv }再也没有发送任何东西（没有确认，没有重复 ACK），尽管它之前确认过数据：那是沉默的对端（挂起、断网，或者连接在它那里已经不存在），不是路径丢包。
   *[none] 丢失的分段没有被快速重传补上（后面没有足够的数据触发重复 ACK），发送方只能等重传定时器到期（Linux 至少 200 ms，之后每次翻倍）。这样的一次停顿就会让请求慢上几百毫秒甚至几秒。{ common-counter }如果丢的是连接建立阶段的包，原因常常是服务端的全连接队列已满。
}{ $severity ->
    [info] {" "}这些重发都发生在连接的最后一次交换结束之后，没有请求在进行中（关闭时的 TLS 告警、FIN）：它们没有延误任何请求。
   *[other] {""}
}
retransmission_timeout-fix = { $silent ->
    [forgot] 查看{ common-silent-rcv }在那个时间的情况：它的应用是否被挂起、被杀死或重启，它的主机是否休眠、重启或换了网络？它前面对未知的流发出 RST 的防火墙或 NAT 也会这样（把 RST 的 IP TTL 与{ common-silent-rcv }其他分组的相比较）。路径丢包解释不了这些重传。
    [near] 查看{ common-silent-rcv }的主机在那个时间的情况：它是否挂起、被暂停或断网；它上面的防火墙是否丢弃它发出的分组（`iptables -S OUTPUT`、`nft list ruleset`）？如果它一切正常，就是抓包漏掉了它发出的分组：在{ common-silent-rcv }的主机上双向重新抓包（`tcpdump -i any`），并查看 tcpdump 的 “packets dropped by kernel”。路径丢包解释不了这些重传。
    [far] 检查{ common-silent-rcv }在那个时间是否仍在运行、可以到达（它的日志、`ping`、朝它运行 `netdoctor trace`）；在{ common-silent-rcv }旁边抓包就能区分这两种情况。
   *[other] 找出丢包的位置（`nstat -az TcpExtTCPTimeouts`、`ip -s link`、沿路径用 `mtr`）。如果丢包发生在建立连接时，检查服务端的全连接队列（`ss -ltn`：Recv-Q 接近 Send-Q；`nstat -az TcpExtListenOverflows TcpExtListenDrops`）：加快 accept（更多 worker、非阻塞的 accept 循环）或调大 backlog（listen() 的参数，例如 nginx `listen ... backlog=N`，以及 net.core.somaxconn）。
}

## syn_retransmit

# $side 为 client：服务端向从未回应的客户端重传 SYN/ACK（端口扫描、伪造源地址的 SYN 洪泛），没有人在等这些握手。
# 没有 $latency（has_latency 为 no）：SYN 从未得到回应，连接没有建立（失败，而不是变慢）。
syn_retransmit-summary = { $side ->
    [client] 服务端重传了 SYN/ACK，而这些连接的客户端从未回应（没有 ACK，也没有数据）：没有人在等这些握手
   *[other] { $has_latency ->
        [yes] SYN 重传拖慢了连接建立：{ common-impact }
       *[no] 连接尝试失败：客户端重传的 SYN 没有得到任何回应（没有 SYN/ACK，也没有 RST），连接从未建立：{ common-impact }
    }
}
syn_retransmit-explanation = { $side ->
    [client] 服务端会一直重传 SYN/ACK，直到收到客户端的 ACK。这些连接的客户端发出 SYN 之后就再没有任何动静：没有回应任何一个 SYN/ACK，也没有发送请求。真正的客户端即使 ACK 丢了，也会回应下一个 SYN/ACK 或发出请求；从不回应的是端口扫描（SYN 扫描不发 ACK）、伪造源地址的 SYN 洪泛，或者已经离开、失去回程路由的客户端。服务端的做法没有问题，也没有握手因此变慢。
   *[other] 建立 TCP 连接需要 SYN、SYN/ACK 和 ACK 三个包。其中一个丢了，就只能等定时器：SYN 或 SYN/ACK 在 1 s 后重传，3 s 时再传一次（较新的 Linux 客户端每秒重传一次 SYN）。这就是请求延迟中 1 s / 3 s 的规律。原因可能是服务端的全连接队列已满、SYN 洪泛防护或防火墙丢弃了 SYN，或者路径上丢包；全连接队列满时，Linux 还会丢弃完成握手的 ACK。{ common-counter }
}
syn_retransmit-fix = { $side ->
    [client] 服务端无需为此修复。如果这些 SYN 不在预期之内，就查看它们的来源（一个来源探测许多端口是扫描；许多从不回应的来源是 SYN 洪泛：SYN cookies、限速）。
   *[other] 检查服务端的全连接队列（`ss -ltn`：Recv-Q 接近 Send-Q；`nstat -az TcpExtListenOverflows TcpExtListenDrops`）：加快 accept（更多 worker）或调大 backlog（listen() 的参数和 net.core.somaxconn）。如果队列正常，就查找丢弃 SYN 的防火墙或限速规则，或者路径上的丢包。
}

## zero_window

zero_window-summary = { common-who }读取太慢：接收窗口降到零（零窗口），{ common-peer }只能等待；{ common-impact }
zero_window-explanation = TCP 的接收窗口就是接收方套接字缓冲区中的空闲空间。{ common-who }通告了零窗口（或窗口已满）：它的应用没有及时读走已到达的数据，缓冲区满了，{ common-peer }只能停止发送并等待（不时发送窗口探测），直到{ common-who }的应用再次读取。瓶颈不在网络，也不在{ common-peer }，而在{ common-who }的应用（忙、被阻塞或每次只读一点），或者它的接收缓冲区太小。
zero_window-fix = 让{ common-who }及时读取套接字（排查被阻塞的事件循环、慢消费者、繁忙的 CPU），每次读大块数据，并给它更大的接收缓冲区（把 SO_RCVBUF 设得太小会关闭自动调优；参见 net.ipv4.tcp_rmem）。

## connection_reset

# $probe 为 idle_reset：服务端一侧在完整且已确认的响应之后、连接静默一段稳定的时间后发出 RST（空闲超时）。
# $probe 为 abortive_close：在按分帧（Content-Length、最后一个分块或无消息体）完整的响应之后、没有请求在等待时，一方立刻用 RST 代替 FIN 关闭连接（SO_LINGER 0）。
# $probe 为 abortive_close_lost：同上，但客户端已经发出了下一个请求（流水线或紧接着响应发出），这个请求没有得到响应，丢失了。
# $probe 为 answer_end_unseen：RST 发生在响应到达期间或刚结束时，但抓包没有保留响应分帧所需的字节（快照长度截断了分块大小行或响应头，或漏抓了数据），无法判断响应是否完整。
# $probe 为 response_stalled：客户端在响应停止到达（5 s 或更久没有字节）之后复位了连接；说明以 "$probe_n of $probe_of client resets" 开头，以最长的停顿（$probe_secs 秒）结尾。
# $probe 为 client_host_gone：客户端一侧的 RST 不带 ACK 标志（主机已经没有这个连接）；说明以 "$probe_n of $probe_of client resets" 开头。
# $probe 为 request_after_close：服务端已经用 FIN 关闭了连接，客户端随后仍在这个连接上写出请求，服务端内核用 RST 回答：这些请求失败了（keep-alive 竞争）。
# $probe 为 closed_by_peer_first：最后一个响应完整之后连接空闲，$side 一方先用 FIN 关闭了它（多半是自己的空闲/keep-alive 超时），另一方随后用 RST 结束了自己一侧：没有请求失败。
# $probe 为 client_setup_abort：客户端在握手之后、发出任何请求之前复位了连接（或复位了服务端的 SYN/ACK）：它自己放弃了连接尝试，没有请求失败；说明以 "$probe_n of $probe_of client resets" 开头。
connection_reset-summary = { $probe ->
    [response_stalled] { $probe_all ->
        [yes] 客户端放弃了 { $probe_n } 个已经停止到达的响应：最长 { $probe_secs } s 没有收到响应的任何字节，随后客户端发出了 RST；这些请求失败了
       *[other] 客户端在响应到达期间复位了 { $probe_of } 个连接；其中 { $probe_n } 个是在响应停止到达之后（最长 { $probe_secs } s 没有任何字节）：这些请求失败了
    }
    [client_host_gone] { $probe_all ->
        [yes] 客户端的主机在响应到达期间复位了 { $probe_n } 个连接，所用的 RST 不确认任何数据：它已经没有这些连接了，响应没有被读取
       *[other] 客户端在响应到达期间复位了 { $probe_of } 个连接；其中 { $probe_n } 个 RST 不确认任何数据：客户端的主机已经没有这些连接了
    }
    [client_setup_abort] 客户端在握手之后、发送任何字节之前复位了 { $probe_n } 个连接（或复位了服务端的 SYN/ACK）：它自己在建立连接时放弃了这些连接，没有连接被拒绝，也没有请求失败
    [closed_by_peer_first] { common-who }先关闭了空闲连接（FIN），{ common-peer }随后用 RST 结束了自己一侧：没有请求失败
    [request_after_close] 客户端在服务端已经关闭（发出 FIN）的连接上发送了 { $probe_n } 个请求：服务端复位了这些连接，这些请求失败了；{ common-impact }
    [idle_reset] 服务端一侧在每个完整且已被确认的响应之后、连接静默一段稳定的时间后复位了空闲连接：这是空闲超时（多半是服务端前面的负载均衡、NAT 或防火墙），不是在请求/响应中途复位；{ $severity ->
        [info] 抓包中没有请求因此失败
       *[other] 有请求发在已被丢弃的连接上，收到的是 RST 而不是响应
    }
    [abortive_close] { $side ->
        [client] 客户端在读完完整的响应之后立刻用 RST 关闭了连接（异常关闭，不是故障）：没有请求失败
       *[other] { common-who }在完整的响应之后立刻用 RST 而不是 FIN 关闭了连接（异常关闭，SO_LINGER 0），不是在请求/响应中途复位；{ $severity ->
            [info] 每个响应都已被客户端确认，没有请求丢失
           *[other] 有些 RST 在客户端确认完整个响应之前就发出了（响应的末尾可能丢失）
        }
    }
    [abortive_close_lost] { common-who }在完整的响应之后立刻用 RST 而不是 FIN 关闭了连接（异常关闭，SO_LINGER 0）；其中有些连接上客户端已经发出了下一个请求，这些请求丢失了
    [answer_end_unseen] { common-who }在响应到达期间或刚结束时复位了连接；抓包截断了响应的分帧，无法判断响应是否完整：{ common-impact }
   *[other] { common-who }用 RST 复位了连接：{ common-impact }
}
connection_reset-explanation = { $probe ->
    [response_stalled] { $probe_all ->
        [yes] 响应还不完整，而客户端复位连接时已经有 5 s 或更久没有收到它的任何字节：客户端放弃了等待（它的读超时，或者等不下去的人），所以请求失败了。原因是这次停顿，而抓包无法说明是谁的：服务端停止了发送，或者路径丢失了它发出的数据（查看服务端的重传，以及停顿之前该连接上的丢包）。
       *[other] 响应还不完整，而客户端复位连接时已经有 5 s 或更久没有收到它的任何字节：客户端放弃了等待（它的读超时，或者等不下去的人），所以请求失败了。原因是这次停顿，而抓包无法说明是谁的：服务端停止了发送，或者路径丢失了它发出的数据（查看服务端的重传，以及停顿之前该连接上的丢包）。其他的 RST 发生在响应仍在到达时：客户端在响应数据还没读完时关闭了套接字，这会让它的内核发出 RST。压测工具停止时、浏览器离开页面时都会这样；这不会拖慢其他请求。
    }
    [client_host_gone] { $probe_all ->
        [yes] 不带 ACK 标志的 RST 是 TCP 协议栈对它不认识的连接的分段的回答（RFC 9293 的 <SEQ=SEG.ACK><CTL=RST>）；在有未读数据时关闭套接字的客户端发出的 RST 带有 ACK。这些连接在响应到达之前就已经在客户端的主机上被丢弃了，没有发出 FIN 或 RST（它的应用被挂起或被杀死，主机休眠、重启或换了网络），或者它前面的防火墙或 NAT 忘记了这条流并代它作答。
       *[other] 客户端在响应数据还没读完时关闭了套接字，这会让它的内核发出 RST。压测工具停止时、浏览器离开页面时都会这样；这不会拖慢其他请求。不带 ACK 标志的 RST 是 TCP 协议栈对它不认识的连接的分段的回答（RFC 9293 的 <SEQ=SEG.ACK><CTL=RST>）；在有未读数据时关闭套接字的客户端发出的 RST 带有 ACK。这些连接在响应到达之前就已经在客户端的主机上被丢弃了，没有发出 FIN 或 RST（它的应用被挂起或被杀死，主机休眠、重启或换了网络），或者它前面的防火墙或 NAT 忘记了这条流并代它作答。
    }
    [client_setup_abort] 服务端回答了客户端的 SYN（或握手已经完成），随后客户端在发送任何字节之前复位了连接：是客户端自己在建立连接时放弃了（只检查连通性、用 SO_LINGER 0 关闭的探测，连接超时，或者在连接过程中被停止的客户端，例如结束运行的压测工具：SYN/ACK 到达时它的套接字已经不在了）。没有连接被拒绝，也没有请求失败。
    [closed_by_peer_first] 每个连接的最后一个响应都已完整，随后连接空闲，{ common-who }用 FIN 关闭了它：多半是{ common-who }自己的空闲（keep-alive）超时，超时的不是{ common-peer }。{ common-peer }之后用 RST 而不是 FIN 结束了自己一侧（用 SO_LINGER 0 或带着未读数据关闭套接字，或进程退出）。没有请求在进行，也没有请求失败：RST 只是结束了一个{ common-who }已经关闭的连接。时间见证据。
    [request_after_close] 服务端用 FIN 关闭了这些连接，客户端随后又在上面写出新的请求。服务端的套接字已经不在了，它的内核用 RST 回答这个请求：请求没有得到响应。客户端会看到错误（“connection reset by peer”、Python 的 RemoteDisconnected、Go 的 “server closed idle connection”）；只有会在新连接上重试幂等请求的客户端能掩盖它，代价是一次新的握手。请求在 FIN 之后几毫秒内写出，是 keep-alive 竞争：客户端复用连接的间隔与服务端保持空闲连接的时间（keep-alive 超时）差不多，两个空闲超时在赛跑；在 FIN 到达很久之后才写出，则是客户端没有发现连接已关闭（复用池中的连接前没有检查服务端的 FIN）。时间见证据。
    [idle_reset] 每个响应都完整到达并被确认，随后连接静默了一段稳定的时间，然后服务端一侧发出 RST：这是丢弃空闲连接的定时器，而不是交换中途的故障。带着服务端地址的 RST 来自在服务端一侧持有该连接的设备：有空闲超时的负载均衡、NAT 或防火墙，或者用 SO_LINGER 0 关闭空闲连接的服务端本身；仅凭分组无法区分（它们的报头与服务端的其他分组没有差别）。受害的是使用连接池的客户端：在连接被复位后仍拿它发下一个请求，就会得到错误（需要重试）；这类请求的数量决定严重程度，见证据。
    [abortive_close] { $side ->
        [client] 每个响应都已完整到达（按其分帧），也没有请求在等待；随后客户端用 RST 而不是 FIN 结束了连接。客户端用 SO_LINGER 0 关闭套接字（一些 HTTP 客户端和压测工具这样做，以免留下 TIME_WAIT），或者关闭时套接字里还有未读的数据，就会这样。服务端日志里会出现并非它的错的“connection reset by peer”；没有丢失任何东西。
       *[other] 每个响应都按其分帧（Content-Length、最后一个分块或无消息体）完整发出，也没有下一个请求在等待；随后{ common-who }用 RST 而不是 FIN 结束了连接：这是异常关闭，不是交换中途的故障。服务端用 SO_LINGER 0 关闭套接字（以免留下 TIME_WAIT），或者关闭时套接字里还有客户端未读的数据，就会这样；它前面的代理也可能以它的名义这样做。风险在于：RST 如果赶在响应最后的报文段之前（丢包或乱序），或者到达一个收到 RST 就丢弃未读数据的客户端协议栈，完整的响应就会变成错误；已经在这个连接上写出下一个请求的客户端（流水线，或立即复用连接的连接池）会因这个请求收到错误。有多少 RST 在客户端确认完响应之前发出，见证据。
    }
    [abortive_close_lost] 每个响应都按其分帧（Content-Length、最后一个分块或无消息体）完整发出；随后{ common-who }用 RST 而不是 FIN 结束了连接：这是异常关闭（SO_LINGER 0，或关闭时套接字里还有未读的数据），不是在响应中途的故障。但证据中的这些连接上，客户端在 RST 到来之前已经写出了下一个请求（与上一个请求一起流水线发出，或在响应之后立即发出）：这些请求没有得到响应，失败了；重试它们的客户端可能把请求发送两次。丢失的请求数决定严重程度，见证据。
    [answer_end_unseen] 抓包没有保留说明响应在哪里结束的字节（快照长度截断了分块大小行或响应头，或者漏抓了数据）：无法判断这些响应是否完整，因此不把它们当作完整的。在完整响应之后负载均衡的空闲超时，与截断响应的复位，在这里看起来一样；用更大的快照长度（tcpdump -s 0）重新抓包就能区分。
   *[other] 连接没有正常关闭，而是被 RST 中止了。可能的原因：没有套接字在监听该端口（或防火墙以 RST 拒绝）；服务端的 worker 崩溃或被杀死，或用 SO_LINGER 0 关闭套接字；全连接队列已满且 net.ipv4.tcp_abort_on_overflow 为 1；中间的代理或负载均衡器超时；或者客户端在响应未读完时关闭了套接字（压测工具停止时、浏览器离开页面时都会这样，不影响其他请求）。被复位的请求都失败了。下方的证据给出了发生复位的连接和分组。
}
connection_reset-fix = { $probe ->
    [response_stalled] 找出响应停止的原因：服务端关于这个请求的日志（被阻塞的 worker、没有应答的后端），以及路径上的丢包（该连接上的重传和超时，朝服务端运行 `netdoctor trace`）。
    [client_host_gone] 查看客户端在那个时间的情况：它的应用是否被挂起或被杀死，它的主机是否休眠或换了网络？对未知的流发出 RST 的防火墙或 NAT 也会这样（把 RST 的 IP TTL 与客户端其他分组的 TTL 相比较）。
    [client_setup_abort] 服务端无需修改；检查客户端的连接超时，以及它为什么放弃新建的连接。
    [closed_by_peer_first] 这些 RST 无需修复：是{ common-who }先关闭了空闲连接，这正是 keep-alive 超时的作用。如果希望{ common-peer }更长时间地复用连接，就调大{ common-who }的 keep-alive 超时（nginx `keepalive_timeout`、Apache `KeepAliveTimeout`）；如果这些 RST 干扰日志，就让{ common-peer }用 FIN 关闭（不要 SO_LINGER 0）。
    [request_after_close] 让客户端先于服务端丢弃空闲连接：把它的连接池空闲超时（Go `IdleConnTimeout`、OkHttp `keepAliveDuration`、Apache HttpClient `evictIdleConnections`）调到小于服务端的 keep-alive 超时（nginx `keepalive_timeout`、负载均衡的空闲超时），或者把服务端的调到大于客户端的；并让客户端重试在复用连接上失败的幂等请求。
    [idle_reset] 让客户端在连接被复位之前丢弃空闲连接：把连接池的空闲超时调到小于证据中测得的静默时间（证据中与之并列的是客户端复用连接前的实测间隔：从响应的最后一个字节到同一连接上的下一个请求；没有连接被复用时，证据会说明抓包中测不到）（Go `IdleConnTimeout`、OkHttp `keepAliveDuration`、Apache HttpClient `evictIdleConnections`），或者把负载均衡、NAT、防火墙（或服务端）的空闲超时调到大于客户端的；并让客户端重试在复用连接上失败的幂等请求。
    [abortive_close] { $side ->
        [client] 请求本身无需修复。若想消除服务端的复位错误，让客户端用 FIN 关闭（不要 SO_LINGER 0），或者保留连接以便复用（keep-alive）。
       *[other] 让{ common-who }用 FIN 关闭：去掉套接字上的 SO_LINGER 0，或者先关闭写方向（shutdown(SHUT_WR)），读到客户端关闭后再 close()。如果它本意就是每个响应后关闭，就用 `Connection: close` 告诉客户端，让客户端不再复用这个连接。
    }
    [abortive_close_lost] 让{ common-who }用 FIN 关闭：去掉套接字上的 SO_LINGER 0，或者先关闭写方向（shutdown(SHUT_WR)），读到客户端关闭后再 close()。如果它本意就是每个响应后关闭，就用 `Connection: close` 告诉客户端，让客户端不再复用这个连接，也不再在上面流水线发送请求。
    [answer_end_unseen] 用更大的快照长度（tcpdump -s 0）重新抓包以便区分。对照下方分组的时间查看{ common-who }的日志（崩溃、超时、被杀死的 worker），以及客户端与服务端之间的代理或负载均衡器（空闲超时、请求超时）。
   *[other] 对照下方分组的时间查看{ common-who }的日志（崩溃、超时、被杀死的 worker），以及客户端与服务端之间的代理或负载均衡器（空闲超时、请求超时）。如果复位发生在握手之后、交换数据之前，检查全连接队列（`ss -ltn`、`nstat -az TcpExtListenOverflows`），并让 tcp_abort_on_overflow 保持为 0，这样队列满时只会变慢而不会复位。
}

## listen_queue_overflow

listen_queue_overflow-summary = { $severity ->
    [info] 同一网络命名空间中另一个监听者的全连接队列（accept 队列）溢出；目标的监听队列在整个运行期间都远未满。{ common-counter }
   *[other] 全连接队列（accept 队列）溢出：服务端来不及 accept，握手被丢弃。{ common-counter }
}
listen_queue_overflow-explanation = { $severity ->
    [info] 内核的溢出计数器统计的是整个网络命名空间里所有监听者。目标自己的监听套接字在运行期间被多次采样，它的全连接队列始终远低于 backlog：这些被丢弃的握手不是它的。是同一命名空间里的另一个服务 accept 得太慢。它不能解释目标的延迟。
   *[other] 内核完成三次握手后，把连接放进监听套接字的全连接队列，等应用调用 accept() 取走。队列的长度由 listen() 的 backlog 和 net.core.somaxconn 中较小者决定。应用 accept 得不够快时队列就会满，内核随即丢弃新的握手（ListenOverflows / ListenDrops 增加），客户端只能等 SYN 重传（1 s、3 s……）：一部分请求因此慢了整整一秒甚至更多。
}
listen_queue_overflow-fix = { $severity ->
    [info] 目标无需修改。要找出溢出的监听者：在 `nstat -az TcpExtListenOverflows` 增长时，用 `ss -ltn` 对比每个监听者的 Recv-Q 与 Send-Q；那个服务需要更快地 accept，或者更大的 listen() backlog（受 net.core.somaxconn 限制）。
   *[other] 让服务端更快地 accept（更多 worker 进程或线程，accept 循环中不做阻塞操作），并调大 backlog（listen() 的参数，例如 nginx `listen ... backlog=N`，以及 net.core.somaxconn）。用 `ss -ltn`（Recv-Q 与 Send-Q 对比）和 `nstat -az TcpExtListenOverflows` 观察。
}

## syn_flood

syn_flood-summary = 半连接队列（SYN 队列）承压：SYN 到达的速度超过了握手完成的速度。{ common-counter }
syn_flood-explanation = SYN 到达的速度超过了握手完成的速度：半连接队列（已收到 SYN、还未完成握手的连接）被填满，内核开始发送 SYN cookie 或丢弃 SYN。原因可能是 SYN 洪泛攻击、大量客户端同时重连，或者客户端的 ACK 在路上丢失。合法的客户端连接变慢或失败。
syn_flood-fix = 保持 net.ipv4.tcp_syncookies=1，合理设置 net.ipv4.tcp_max_syn_backlog 和监听队列的长度；如果是攻击，在上游（防火墙、负载均衡器）限制 SYN 速率。用 `ss -tan state syn-recv` 和 `nstat -az TcpExtSyncookiesSent TcpExtListenDrops` 观察。

## conntrack_table_full

conntrack_table_full-summary = 连接跟踪表（nf_conntrack）已满或接近上限。{ common-counter }
conntrack_table_full-explanation = 经过 netfilter 的每个流（NAT、有状态的防火墙规则、Docker/Kubernetes 网络）都需要在连接跟踪表中占一项。表满时，内核会丢弃新连接的第一个包（内核日志中出现 "nf_conntrack: table full, dropping packet"），客户端只能等 SYN 重传：新连接慢上一秒或更久，甚至失败。
conntrack_table_full-fix = 调大 net.netfilter.nf_conntrack_max（以及哈希表大小 /sys/module/nf_conntrack/parameters/hashsize），缩短不再需要的条目的超时（如 nf_conntrack_tcp_timeout_time_wait），或者让不需要跟踪的流量绕过连接跟踪（raw 表中的 NOTRACK / `notrack`）。用 `conntrack -C` 与 nf_conntrack_max 对比观察。

## ephemeral_port_exhaustion

ephemeral_port_exhaustion-summary = 本地临时端口即将耗尽：connect() 变慢或失败。
ephemeral_port_exhaustion-explanation = 连向同一服务端地址和端口的每个出站连接都需要自己的本地端口，端口范围由 net.ipv4.ip_local_port_range 决定。每个关闭的连接会在 TIME_WAIT 状态占住它的端口约 60 秒。每秒新建的短连接太多时，空闲端口越来越少，内核寻找空闲端口的时间越来越长，最后 connect() 以 EADDRNOTAVAIL 失败。
ephemeral_port_exhaustion-fix = 复用连接（HTTP keep-alive、连接池），不要每个请求新建一个连接；加大 net.ipv4.ip_local_port_range；对出站连接开启 net.ipv4.tcp_tw_reuse=1；或者把流量分散到更多的目标地址和端口上。

## interface_errors

interface_errors-summary = 网卡在运行期间出现错误、丢包或溢出。{ common-counter }
interface_errors-explanation = 网卡统计到了它无法接收或发送的分组：rx_drop/rx_fifo 表示接收环形缓冲区或内核的积压队列满了（CPU 处理不过来），rx_errors/rx_crc 指向线缆、光模块或双工设置的问题，tx 方向的错误则来自驱动或对端。每个丢掉的分组都要靠重传补上：请求因此变慢。
interface_errors-fix = 用 `ip -s -s link show DEV` 和 `ethtool -S DEV` 查看具体原因：加大接收环（`ethtool -G`）、调大 net.core.netdev_max_backlog、把中断分散到多个 CPU（RSS/RPS），检查线缆和协商的速率/双工。

## slow_server_processing

common-server-time = { $has_latency ->
    [yes] 服务端要 { $latency } 才开始回复
   *[no] 服务端要很久才开始回复
}
# $probe 为 proxy_waited：服务端的耗时是代理的超时（http_errors 的 proxy_timeout，$probe_secs 秒）：代理在等它的上游，等到放弃后回答 504。
# $probe 为 fixed_wait：慢的请求每次都等了同样的 $probe_secs 秒（$probe_n/$probe_of 个请求）：一个定时器（长轮询有意挂起的请求，或服务端内部的固定超时），不是负载。
slow_server_processing-summary = { $probe ->
    [fixed_wait] { common-server-time }{ $has_pct ->
        [yes] （影响 { $pct }% 的请求）
       *[no] {""}
    }；每个慢请求都等了同样的 { $probe_secs } s：这是有意挂起的请求（长轮询）或服务端内部的定时器，不是负载
    [proxy_waited] { common-server-time }{ $has_pct ->
        [yes] （影响 { $pct }% 的请求）
       *[no] {""}
    }；这是代理的 { $probe_secs } s 超时：它在等它的上游，等到放弃后回答了 504，而不是它自己的处理
   *[other] { $side ->
    [host] { common-server-time }，但机器的 CPU 已饱和：服务端的耗时反映的是共享主机上的 CPU 争用
   *[other] { common-server-time }{ $has_pct ->
        [yes] （影响 { $pct }% 的请求）
       *[no] {""}
    }
}
}

slow_server_processing-explanation = { $probe ->
    [fixed_wait] 从请求的最后一个字节到响应的第一个字节之间，服务端在处理或在等待。但 { $probe_of } 个请求中有 { $probe_n } 个都等了 { $probe_secs } s，彼此相差很小：因负载或数据而慢的处理每次耗时都不同，每次都一样的等待是一个定时器。要么服务端有意挂起请求，直到有话可说（长轮询），挂起时间到了才回答；要么服务端内部的某个固定超时先到期，它才能回答（DNS 解析器的 5 s 超时、锁或连接池的等待、超时的后端调用）。
    [proxy_waited] 这里的服务端是上游前面的代理：中位数请求等了约 { $latency } 才有回复，这段等待正是代理的 { $probe_secs } s 超时（http_errors 的 504 应答都在请求之后 { $probe_secs } s 到达）。代理的时间花在等上游上，上游没有在 { $probe_secs } s 之内应答；它真正需要的时间更长。网络及时地送达了请求和应答。
   *[other] 从请求的最后一个字节到响应的第一个字节之间，服务端在处理（或在等待：数据库、后端、锁、已满的 worker 池）。网络及时地送达了请求和响应；{ $has_latency ->
    [yes] 中位数请求在服务端内部等待约 { $latency } 才开始有回复。
   *[no] 请求在服务端内部等待了很久才开始有回复。
}{ $side ->
    [host] 但运行期间机器的 CPU 非常繁忙，服务端与压测负载共用 CPU，它的一部分时间花在等待 CPU 上，而不是在工作：这里的耗时不能只算在服务端头上。
   *[other] {""}
}
}
slow_server_processing-fix = { $probe ->
    [fixed_wait] 在处理函数中找一个 { $probe_secs } s 的有意等待或超时：如果这个接口是长轮询（请求被挂起，直到有事件或挂起时间到），这是正常的，它的时长不是延迟；否则找出到期的那个定时器（/etc/resolv.conf 中解析器的超时、锁或连接池的等待、后端调用的超时），以及它等的东西为什么没有来。
    [proxy_waited] 由 { $caused_by }（上面）引起：查看代理后面的上游，它为什么比 { $probe_secs } s 还慢（它自己的日志、慢的数据库或后端、卡住或饱和的 worker 池），而不是代理的处理函数；只有当这么长的时间是预期的，才调大代理的超时。
   *[other] { $side ->
    [host] 先在没有争用的情况下测量：减少连接数（-c）或压测线程，或者从另一台机器发起压测；如果那时服务端仍然慢，再查看服务端内部（剖析请求处理函数、它的后端、worker 是否饱和）。
   *[other] 查看服务端内部：剖析请求处理函数、它的后端以及 worker/队列是否饱和（例如应用自己的耗时日志，或 nginx 的 `$upstream_response_time`）。
}
}

# 服务端慢在 TLS 握手（探测 tls_handshake_server）：握手是全部原因时用 tls-*，请求也慢时在说明后加 tls-also。
common-tls-server-summary = 服务端在 TLS 握手中要 { $latency } 才回复（{ $probe_n }/{ $probe_of } 次握手往返）：每个新连接在发出第一个请求之前都要等这么久
common-tls-server-explanation = 请求本身回答得很及时，但 TLS 握手不是。TLS 握手的往返是建立连接的开销，不算作请求，所以它们不在请求的延迟数字里；在这些往返中，服务端扣除往返时间后自己花了很久才回复（证据中给出次数、中位数和最大值）。这是握手在服务端的工作：很大的 RSA 密钥做的签名、握手期间的 OCSP 或证书查询、繁忙或被限流的 CPU。每个新连接在发出第一个请求之前都要付出它。
common-tls-server-fix = 让服务端的握手更便宜：用 ECDSA（P-256）证书代替很大的 RSA 密钥；从缓存做 OCSP 装订（nginx `ssl_stapling on` 并配置 resolver），而不是每次握手都去查询；开启会话恢复（会话缓存或会话票据），让回头的客户端跳过完整握手；复用连接，让握手只付一次。
common-tls-server-also = {" "}TLS 握手也慢：在 { $probe_n }/{ $probe_of } 次 TLS 握手往返（建立连接，不算作请求）中，服务端扣除往返时间后也要很久才回复（见证据），每个新连接在第一个请求之前都要付出它：很大的 RSA 密钥做的签名、握手期间的 OCSP 或证书查询、繁忙或被限流的 CPU。

## short_connections

# $probe 为 idle_timeout：服务端（或它前面的负载均衡）在连接空闲一段稳定的时间后关闭它。
short_connections-summary = { $probe ->
    [request_limit] 服务端在每个保持的连接上只服务固定数量的请求就关闭它（{ $probe_n }/{ $probe_of } 个连接）：{ $pct }% 的请求要付出新建连接的开销{ $has_latency ->
        [yes] （{ $latency }）
       *[no] {""}
    }
   *[other] 每个请求一个连接{ $has_pct ->
        [yes] （{ $pct }% 的请求新建了连接）
       *[no] {""}
    }：每个请求都要付出建立连接的开销{ $has_latency ->
        [yes] （中位数 { $latency }）
       *[no] {""}
    }
}{ $probe ->
    [idle_timeout] ；服务端一侧在每个连接空闲一段稳定的时间后关闭了它：空闲（keep-alive）超时短于客户端复用连接前的等待，所以客户端只好新建连接
    [client_asked_close] ；是客户端要求的：服务端先关闭连接，但都是在回答了要求关闭的请求（`Connection: close`，或不带 `Connection: keep-alive` 的 HTTP/1.0）之后
   *[other] {""}
}
short_connections-explanation = { $probe ->
    [idle_timeout] 每个请求都新建了一个 TCP 连接：服务端（或它前面的负载均衡、NAT、防火墙）在连接空闲一段稳定的时间后发出第一个 FIN（或 RST），这个固定的值就是它的空闲（keep-alive）超时，而不是每个响应之后都关闭（那样关闭会在响应后几毫秒内发生）。客户端在复用连接之前等待的时间比这个超时更长，于是每个请求都发现连接已被关闭，只能付出新建连接的开销：两边单独看都没有错，是两边的空闲设置不匹配。只在连接上不停发请求的 keep-alive 探测不会让连接空闲，所以它能复用连接与此并不矛盾。
    [client_asked_close] 每个请求都新建一个 TCP 连接，响应之后就关闭。第一个 FIN 虽然由服务端发出，但它回答的请求要求关闭连接（见证据中抓到的请求头）：HTTP/1.1 除非请求带 `Connection: close`，否则保持连接；HTTP/1.0 除非带 `Connection: keep-alive`，否则每个响应后都关闭。服务端只是照客户端的要求做：每个请求一个连接是客户端的设置，不是服务端的。握手要先花一个往返时间，请求才能发出；每个新连接都从很小的拥塞窗口开始；每个关闭的连接都会留下一个 TIME_WAIT 套接字。
    [request_limit] keep-alive 在这里是生效的，但每个连接只服务固定数量的请求：服务端在该数量的最后一个响应之后立即发出 FIN（不是空闲一段时间之后），这是每连接请求数上限（nginx `keepalive_requests`、Apache `MaxKeepAliveRequests`、Envoy `max_requests_per_connection`，或应用自己的上限）。于是每隔这么多个请求，就有一个请求要等待新建连接：握手（证据中给出中位数；有 TLS 时更多）和从头开始的拥塞窗口，每个关闭的连接还会留下一个 TIME_WAIT 套接字。客户端越远，每次握手越贵。
    [tls_handshake] 每个请求都新建一个 TCP 连接并在上面建立 TLS 会话，响应之后就关闭。TCP 握手先花一个往返时间，TLS 握手再花一到两个往返时间（TLS 1.2 两个，TLS 1.3 或恢复的会话一个），请求才能发出。这些 TLS 握手的往返（证据中给出次数和耗时）不携带请求，这里算作建立连接的开销，而不是请求。每个新连接都从很小的拥塞窗口开始；每个关闭的连接都会留下一个 TIME_WAIT 套接字。TLS 会话恢复（服务端的会话缓存或会话票据，客户端保留会话）或 TLS 1.3 可以把握手减到一个往返；只有复用连接才能完全省掉它。
   *[other] 每个请求都新建一个 TCP 连接，响应之后就关闭。握手要先花一个往返时间，请求才能发出；每个新连接都从很小的拥塞窗口开始；每个关闭的连接都会留下一个 TIME_WAIT 套接字（速率高时会导致临时端口耗尽）。使用 keep-alive，每个连接只需握手一次。这里的建立连接开销只算到客户端对 SYN/ACK 的 ACK 为止：客户端在此之后、写出请求之前自己等待的时间属于客户端应用（connect() 与 write() 之间的工作），不算在网络或服务端头上，复用连接也不能省掉它。
}
short_connections-fix = { $probe ->
    [request_limit] 调高服务端的每连接请求数上限：nginx `keepalive_requests`（1.19.10 起默认 1000）、Apache `MaxKeepAliveRequests`（默认 100）、Envoy `max_requests_per_connection`。上限的用处是重新均衡连接、释放每连接的内存，所以保持在几百或几千，而不是取消它。
    [idle_timeout] 证据中与空闲超时并列的是客户端复用连接前的实测间隔（从响应的最后一个字节到同一连接上的下一个请求；没有连接被复用时，证据会说明抓包中测不到）。让两边的空闲设置匹配：把服务端的空闲超时（nginx `keepalive_timeout`、Apache `KeepAliveTimeout`、代理的 upstream 空闲超时；如果是 RST，还有负载均衡、NAT 或防火墙的空闲超时）调到大于客户端复用连接的最长间隔；或者把客户端连接池的空闲超时调到小于服务端的超时（例如 Go 的 `IdleConnTimeout`、OkHttp 的 `keepAliveDuration`，或按请求速率确定连接池大小），让客户端先丢弃连接，永远不会拿到一个正在被关闭的连接。
    [client_asked_close] 让客户端保持连接：不要再发送 `Connection: close`（HTTP 客户端或压测工具的 keep-alive 开关，例如 Go 的 `DisableKeepAlives` 或 `Request.Close`，或手工加上的请求头），使用 HTTP/1.1（或在 HTTP/1.0 中发送 `Connection: keep-alive`），并按请求速率配置连接池来复用连接。
   *[other] 复用连接：使用 HTTP/1.1 keep-alive（不要发送 `Connection: close`；wrk、curl 和 HTTP 客户端库默认都会复用连接），在客户端使用连接池，在 nginx 的 upstream 块中使用 `keepalive`；如果是服务端关闭连接，开启它的 keep-alive 并调大限制（nginx `keepalive_timeout`、`keepalive_requests`）。如果本次运行特意关闭了 keep-alive（--no-keepalive），这里无需修复。
}

## server_not_listening

# $probe 为 handshakes：握手被放弃（有程序在监听），不是没有监听者；为 scan：端口扫描找到的关闭端口。
server_not_listening-summary = { $probe ->
    [scan] 端口扫描：一个客户端地址向同一服务端地址的许多端口发送 SYN，被拒绝的是关闭的端口，这是扫描的结果，不是服务端宕机
    [handshakes] { $pct }% 的连接尝试在握手完成前以 RST 结束（握手被放弃），而到同一地址的其他连接完成了握手、或 RST 由客户端发出：有程序在监听{ $has_caused_by ->
        [yes] ，这与路径上的丢包（{ $caused_by }）一致
       *[no] {""}
    }
   *[other] 没有程序在监听目标端口：连接被拒绝
}
server_not_listening-explanation = { $probe ->
    [scan] 一个客户端地址连接了同一服务端地址的许多不同端口，其中不到一半完成了握手：这是在探测哪些端口开放的端口扫描，而不是应用程序在连接它的服务端。关闭的端口用 RST 回应 SYN，被过滤的端口则完全不回应。
    [handshakes] 这些连接尝试从未完成握手，最后以 RST 结束。在数据包里这和没有监听者的端口一样，但本次运行看到了有程序在监听（具体数字见下方证据）。被放弃的握手也是这个样子：SYN 或 SYN/ACK 在路上丢失（客户端重发 SYN，connect 超时；迟到的 SYN/ACK 随后遇到客户端的 RST），或者服务端在全连接队列满时丢弃 SYN。
   *[other] 目标主机对连接请求回复了 TCP RST，这正是没有套接字监听该端口时内核的做法。请求不是变慢，而是立即失败。可能是服务进程没有运行，它监听在另一个端口或地址上（例如只监听 127.0.0.1 或只监听 IPv6），或者防火墙以 RST 拒绝了该端口。
}
server_not_listening-fix = { $probe ->
    [scan] 服务端无需为此修复。如果这次扫描不在预期之内，就查看它的来源，以及防火墙对它发现的开放端口的规则。
    [handshakes] 检查路径上的丢包（packet_loss_retransmission、route_problem、`netdoctor trace`）和监听队列（ListenOverflows、listen_queue_overflow）；已经存在的监听者不需要重启。
   *[other] 启动服务，或者让 netdoctor 指向它真正监听的端口（在服务端主机上用 `ss -ltnp` 列出监听的套接字及其进程）。
}

## http_errors

# $probe 为 proxy_timeout：多数失败是 504，且都在请求之后同样的时间（$probe_secs 秒）到达：代理的超时；说明以 "$probe_n of $probe_of captured HTTP 504 answers" 开头。
# $probe 为 upstream_refused：多数失败是 502，且在一毫秒左右就到达：上游拒绝或关闭了连接；说明以 "$probe_n of $probe_of captured HTTP 502 answers" 开头。

# $probe 为 rate_limit：大多数失败是 429（Too Many Requests），是限流按设计拒绝了超出配额的请求。
http_errors-summary = { $probe ->
    [proxy_timeout] { $probe_n } 个请求收到 HTTP 504 Gateway Timeout，每个都在请求之后约 { $probe_secs } s：这是代理的超时，它等它的上游等到放弃了
    [upstream_refused] { $probe_n } 个请求收到 HTTP 502 Bad Gateway，都在请求之后很短的时间内：代理的上游立即拒绝或关闭了连接（上游宕机）
    [rate_limit] { $has_pct ->
        [yes] { $pct }% 的请求
       *[no] 部分请求
    }收到 HTTP 429 Too Many Requests：限流拒绝了这次压测超出配额的部分，详见下方证据
   *[other] { $side ->
    [network] { $has_pct ->
        [yes] { $pct }% 的请求
       *[no] 部分请求
    }在客户端没有及时收到应答，但服务端回复了，并一再重传应答：应答在路径上丢失，详见下方证据
   *[other] 请求失败：{ $has_pct ->
        [yes] { $pct }% 的请求
       *[no] 部分请求
    }出错（4xx/5xx 响应、复位或超时），详见下方证据
    }
}
http_errors-explanation = { $probe ->
    [proxy_timeout] 这些 504 应答都在请求之后几乎相同的时间（约 { $probe_secs } s）到达：固定的等待是定时器的特征，而不是恰好很慢的处理。504 Gateway Timeout 是代理或网关（nginx、HAProxy、负载均衡、API 网关）在它的上游（后面的应用）没有在超时之内应答（或接受连接）时给出的回答：代理等了 { $probe_secs } s 就放弃了，而上游还在处理或者卡住了。这些请求的延迟量出的是代理的超时，而不是上游真正需要的时间（更长）。
    [upstream_refused] 502 Bad Gateway 是代理没有从上游得到有效应答时的回答。这些 502 在请求之后很快就到了，上游来不及做任何处理：代理连接上游时被拒绝（没有进程在监听：应用宕机、正在重启或在另一个端口上），被复位，或者上游没有应答就关闭了连接（它处理这个请求时崩溃了）。
    [rate_limit] 服务端（或它前面的代理、网关）回复了 429 Too Many Requests：限流有意在处理之前拒绝了超出配额的请求。这次压测要求的速率超过了限额，所以这些失败衡量的是限额，而不是服务端的健康状况；延迟数字也大多来自快速的拒绝，而不是真正的请求。
   *[other] { $side ->
    [network] 连接建立了，服务端确认收到了请求，它的内核在目标的连接上一再重传应答，而客户端旁的抓包几乎没有看到这些报文到达：服务端回复了，应答在两台主机之间丢失。小包（握手、请求、ACK，也许还有响应头）能通过，满尺寸的数据段却通不过：这是路径 MTU 黑洞的迹象（路径上 MTU 变小的那一跳丢弃满尺寸报文，而告知服务端的 ICMP“需要分片”在途中被过滤），或者有过滤规则丢弃了服务端的数据。
   *[other] 请求失败了：服务端返回了错误状态码（4xx 表示请求本身不对，例如路径、主机名、方法或认证；5xx 表示服务端出错），或者在响应完成之前复位、关闭了连接，拒绝连接，或在超时时间内没有回复。如果是压测端自己的资源（文件描述符、本地端口）先耗尽，失败说明不了服务端的问题。失败的请求无论多快都不算健康。
    }
}
http_errors-fix = { $probe ->
    [proxy_timeout] 查看代理后面的上游，而不是代理本身：它为什么比 { $probe_secs } s 还慢（它自己关于这些请求的日志、慢的数据库或后端、卡住或饱和的 worker 池）？代理的错误日志会写出上游的地址（nginx：`upstream timed out (110: Connection timed out) while reading response header from upstream`）。只有当上游本来就需要这么长时间（报表、导出）时，才调大代理的超时（nginx `proxy_read_timeout`、HAProxy `timeout server`、负载均衡的空闲或请求超时）；否则客户端只是为同样的失败等得更久。
    [upstream_refused] 查看代理转发到的上游：它是否在运行，是否在代理使用的地址上监听？代理的错误日志会写出这个地址（nginx：`connect() failed (111: Connection refused) while connecting to upstream`）；在上游的主机上用 `ss -ltn` 查看监听的端口；处理请求时崩溃会出现在上游自己的日志里。除非代理指向了错误的地址，否则代理无需修改。
    [rate_limit] 要衡量服务端本身，就待在限额以内：用低于通过量的固定速率（`--rate`），或减少连接数（-c）。如果真实的客户端也被拒绝，就在设置限额的地方调高它（nginx 的 `limit_req_zone … rate=` 和 `burst`、API 网关的配额、应用自己的限流），或让客户端退避并遵守 Retry-After。
   *[other] { $side ->
    [network] 查看两台主机之间的路径，而不是服务端的错误日志：让 ICMP 类型 3 代码 4（以及 ICMPv6 包过大）通过路径上的防火墙，或在路由器上钳制 MSS（`iptables -t mangle -A FORWARD -p tcp --tcp-flags SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu`），或把接口的 MTU 调到路径上最小的那个；`ping -M do -s 1472 TARGET` 可以看出满尺寸的包能否通过。
   *[other] 查看服务端的错误日志中失败的请求；一部分 503 通常意味着后端过载或限流，复位和超时意味着 worker 崩溃或饱和。对于 4xx，核对 URL（路径和主机名）、方法（-m）和请求头（-H，例如认证），`curl -v URL` 会显示服务端的回复。如果是压测端的资源不够：调大文件描述符上限（`ulimit -n`）、加大 `net.ipv4.ip_local_port_range` 或使用 keep-alive，或减少连接数（`-c`）。
    }
}

## high_base_rtt

high_base_rtt-summary = 路径本身的往返时间（RTT）就很高{ $has_latency ->
    [yes] ：约 { $latency }
   *[no] {""}
}
# $probe 为 near_ack：抓包点附近的一方在不到 1 ms 内确认了请求（代理、TCP 加速器、代替服务端应答的防火墙，或服务端本身），握手的时间不是到它的往返时间。
high_base_rtt-explanation = 单个 SYN 的往返时间已经这么长：延迟来自距离或路由，而不是服务端或 TCP 的行为。每个请求至少付出一个往返时间，每个新连接还要再付出一个（握手），TLS 再加一到两个。{ $probe ->
    [near_ack] 但请求在发出后不到 1 ms 就被确认了：应答的一方就在抓包点附近（代理、TCP 加速器、代替服务端应答的防火墙，或者服务端本身），所以握手的时间并不是到它的往返时间。时间花在它之外（先向外建立连接再应答 SYN 的代理要等这一段往返，它的响应也要再等一次），或者花在它内部（SYN 应答得晚）：抓包无法区分。
   *[other] {""}
}
high_base_rtt-fix = 让服务离客户端更近（就近的区域或 CDN），保持连接（keep-alive、连接池）以免每次都握手，并减少每个请求的往返次数（TLS 1.3、会话恢复、HTTP/2）。

## route_problem

route_problem-summary = 路由上的某一跳增加了延迟或丢包{ $has_latency ->
    [yes] （约 { $latency }）
   *[no] {""}
}
route_problem-explanation = 逐跳探测（类似 traceroute / mtr）显示，从某一跳开始延迟明显增加，或者出现了持续到终点的丢包。只在某一跳上出现、之后各跳和终点都正常的丢包通常只是路由器限制了 ICMP 回复的速率，不算问题；持续到终点的才是。
route_problem-fix = 把逐跳结果（`netdoctor trace` 或 `mtr -T`）交给负责该跳的网络团队或运营商；比较不同时段、不同路径的结果，必要时换一条路由或出口。

## dns_no_nameserver

dns_no_nameserver-summary = 没有配置可用的域名服务器（resolv.conf 为空或缺失）
dns_no_nameserver-explanation = 系统解析器在 /etc/resolv.conf 中找不到可用的 nameserver，名字解析会失败，或者退回到本机地址上并不存在的服务器，每次都要等到超时。
dns_no_nameserver-fix = 在 /etc/resolv.conf 中配置可用的 nameserver（或修好生成它的服务：systemd-resolved、NetworkManager、DHCP 客户端），然后用 `netdoctor dns NAME` 复查。

## dns_server_unreachable

# $dns_all_silent：客户端问过的每个 nameserver 都没有应答（不止一个）：先查它们共用的东西。
dns_server_unreachable-summary = 一个已配置的域名服务器没有应答（超时）
dns_server_unreachable-explanation = { $dns_all_silent ->
    [yes] 这个 nameserver 对查询没有回复。解析器会先等它超时（默认 5 s，见 resolv.conf 的 options timeout），再问下一个服务器：每次查询名字的程序都会卡住几秒；所有服务器都不应答时，解析就会失败。 抓包中没有任何 nameserver 回答过任何查询，所以解析都失败了；几个 nameserver 同时宕机，不如它们共用的某个环节出了问题可能（客户端的链路或网关，丢弃 DNS 的防火墙）。
   *[no] 这个 nameserver 对查询没有回复。解析器会先等它超时（默认 5 s，见 resolv.conf 的 options timeout），再问下一个服务器：每次查询名字的程序都会卡住几秒；所有服务器都不应答时，解析就会失败。
}
dns_server_unreachable-fix = { $dns_all_silent ->
    [yes] 客户端问过的每个 nameserver 都没有应答：先查它们共用的东西。在本机和另一个网络上分别用 `dig @服务器 名字` 检查：从别处能得到回答，就是客户端到 53 端口（UDP 和 TCP）的路径断了（它的链路、网关、防火墙）；到处都没有回答，就替换客户端 resolv.conf 中的 nameserver。逐个替换 nameserver 解决不了共用环节的问题。
   *[no] 从 resolv.conf 中去掉不应答的 nameserver 或修好它（防火墙是否放行了 UDP/TCP 53 端口，服务是否在运行）；在 resolv.conf 中设置较短的 `options timeout:1 attempts:2` 以减小影响。
}

## dns_slow

# $probe 为 dns_search_list：搜索列表（search 与 ndots）让解析先问了几个不存在的名字才得到应答；说明以 "$probe_n of $probe_of names" 开头，$latency 是这些名字花掉的时间。
# $probe 为 dns_unanswered（analyze 从抓包中看出）：域名服务器回答了一部分查询，另一部分没有应答；说明以 "$probe_n of $probe_of queries" 开头，$latency 是重试后才得到应答的查询多等的时间（中位数）。
# $probe 为 dns_truncated：UDP 上的应答被截断（TC 位），客户端只好改用 TCP 重问；$latency 是 TCP 上得到应答的查找从第一个查询到 TCP 应答的时间（中位数）。
dns_slow-summary = { $probe ->
    [dns_search_list] 搜索列表让解析先问了 { $probe_n } 个不存在的名字（共问了 { $probe_of } 个）才得到应答：多花了 { $latency }
    [dns_unanswered] 域名服务器有应答，但 { $probe_of } 个查询中有 { $probe_n } 个没有得到应答{ $has_latency ->
        [yes] ：重试后才得到应答的查找多等了约 { $latency }
       *[no] {""}
    }
    [dns_truncated] 域名服务器在 UDP 上的应答被截断（TC 位）：客户端只好改用 TCP 重问{ $has_latency ->
        [yes] ，每次查找共约 { $latency }（中位数，含 TCP 重问）
       *[no] {""}
    }
   *[other] 名字解析很慢或不稳定{ $has_latency ->
        [yes] ：约 { $latency }
       *[no] {""}
    }
}
dns_slow-explanation = { $probe ->
    [dns_search_list] 名字中的点少于 resolv.conf 中的 ndots，解析器先把每个 search 域名接在名字后面去问（A 和 AAAA），这些名字都不存在（NXDOMAIN），每个都要到域名服务器走一个来回，最后才问原样的名字。域名服务器并不慢，是客户端的解析配置让它多问了几次；每个需要解析这个名字的新连接都要先付出这段时间。Kubernetes Pod 默认的 ndots:5 和三个集群后缀就会这样。
    [dns_unanswered] 这个域名服务器回答了抓包中的其他查询，所以它在运行、也可达，但有一部分查询没有得到应答：这些查找要等解析器超时（默认 5 s，见 resolv.conf 的 options timeout）再重试，没等到应答的查找就失败了。来的应答如果很快，是路上丢了查询或应答（丢包的链路、限速的防火墙），或者服务器在负载下丢弃了一部分；来的应答也慢，则是服务器过载（见证据中的时间）。
    [dns_truncated] 应答放不进客户端提供的 UDP 报文（512 字节或它的 EDNS 缓冲区大小），服务器发出带 TC 位的截断应答，解析器改用 TCP 53 端口重问：每次查找多一次 TCP 握手和一个来回；TCP 53 被拦截时查找就会失败。给出的时间从 UDP 上的第一个查询算到 TCP 上的应答。
   *[other] 名字解析花了很长时间，或者时快时慢（部分查询超时、重试）。每个需要解析名字的新连接都要先付出这段时间，请求随之变慢。
}
dns_slow-fix = { $probe ->
    [dns_search_list] 在客户端的配置中写完整的域名并加上末尾的点（FQDN，例如 api.example.com.），跳过搜索列表；或降低 ndots：resolv.conf 中的 `options ndots:1`（Kubernetes 中在 Pod 规格的 dnsConfig.options 里设置）；或使用节点本地的 DNS 缓存，让 NXDOMAIN 的应答来自本节点。
    [dns_unanswered] 查找客户端和域名服务器之间的 DNS 丢包（多次运行 `netdoctor dns 名字`；UDP 53 上的防火墙或限速；服务器的负载和丢包计数）；在 resolv.conf 中调低 `options timeout:`，让丢失的查询更早重试，或改用更近、更健康的解析器（本机缓存）。
    [dns_truncated] 精简记录（每个名字少一些地址、缩短 CNAME 链），在客户端启用 EDNS0（resolv.conf 中的 `options edns0`）让较大的 UDP 应答放得下，并确认到域名服务器的 TCP 53 端口是放行的。
   *[other] 使用更近或更健康的解析服务器（例如本机的缓存解析器 systemd-resolved、dnsmasq、unbound），检查系统解析器的配置（nsswitch.conf、resolv.conf 中的 search 和 ndots），并在应用中缓存解析结果。
}

## reverse_dns_timeout

reverse_dns_timeout-summary = 反向解析（PTR 查询）超时：解析地址的工具会卡住
reverse_dns_timeout-explanation = 域名服务器不回答这些地址的 PTR 查询，于是每个把地址反查成名字的程序（日志、ssh、netstat/ss 不带 -n、traceroute、各种访问控制）都要等超时，看起来就像网络很慢。
reverse_dns_timeout-fix = 在域名服务器上提供反向区域（in-addr.arpa），或让它对这些地址立即回答 NXDOMAIN；在工具中使用 -n 选项避免反查（例如 `ss -n`、`traceroute -n`）。

## dns_name_not_found

dns_name_not_found-summary = 名字不存在：域名服务器有应答，但这个名字没有地址（NXDOMAIN 或没有该类型的记录）
dns_name_not_found-explanation = 解析器本身工作正常：每个有应答的域名服务器都说这个名字不存在，系统的 getaddrinfo 也失败了。网络里没有慢或坏的地方，错的是名字本身（或补全它的 search 列表），或者区域里缺少这条记录。
dns_name_not_found-fix = 检查 URL 中的主机名拼写、/etc/resolv.conf 的 search 域和 ndots，或者在 DNS 区域中添加这条记录；然后用 `netdoctor dns NAME` 复查。

## receive_window_limited

receive_window_limited-summary = 传输受接收窗口限制：发送方在途的数据一直顶到对端通告的窗口
receive_window_limited-explanation = 发送方的拥塞窗口还有余量，但在途字节数始终接近接收方通告的窗口：接收方的接收缓冲区（tcp_rmem 或 SO_RCVBUF）小于带宽时延积，发送方只能等待确认后才能继续发送。吞吐量约等于窗口除以往返时间。
receive_window_limited-fix = 在接收方调大 net.ipv4.tcp_rmem 的最大值（或程序设置的 SO_RCVBUF），使其不小于带宽时延积；注意已接受的连接继承监听套接字的缓冲区，需在服务启动前设置。然后用 `netdoctor throughput` 复测。

## application_limited

application_limited-summary = 传输受应用限制：发送方写得比网络和接收方能承受的慢
application_limited-explanation = 发送方按目标速率（或自身的写入节奏）发送，在途数据远低于拥塞窗口和接收窗口：网络和接收方都还有余量，瓶颈在写数据的程序本身。
application_limited-fix = 提高应用的写入速率（去掉限速、加大每次写入、使用更多并行流），或确认这个速率就是预期的；网络和内核参数不需要修改。
## no_route

no_route-summary = 没有通往目标的路由：连接在发出任何数据包之前就失败了
no_route-explanation = 运行所在网络命名空间的路由表里没有能到达这个地址的路由（或者是一条拒绝路由），内核直接以“网络不可达”拒绝连接。请求根本没有离开客户端，服务端不可能看到它，所以不是服务端的问题。
no_route-fix = 为目标网段添加路由或默认网关（`ip route add 目标网段 via 网关`），或者检查 URL 中的地址是否写对；然后用 `ip route get 地址` 复查。

## neighbour_unreachable

neighbour_unreachable-summary = 下一跳不可达：直连链路上的邻居不应答 ARP/NDP，或途中的路由器报告目标不可达
neighbour_unreachable-explanation = 两种情形之一：目标地址（或通往它的网关）在直连网段上，却没有任何设备回应 ARP（IPv4）或邻居发现（IPv6）请求，邻居表项停留在 INCOMPLETE 或 FAILED 状态，内核没有链路层地址，发不出 SYN；或者途中的路由器回复了“主机不可达”或“网络不可达”：它自己解析不到下一跳，或没有通往目标的路由。无论哪种情形，服务端都从未收到请求，问题在网络一侧，不在客户端或服务端。
neighbour_unreachable-fix = 直连地址：检查这个地址上是否真的有主机在线、地址是否写对（`ip neigh show` 或 `ip -6 neigh show` 查看表项状态，`arping` 试探），以及链路和 VLAN 配置。经过网关：检查网关本身是否在线，以及报告不可达的路由器上是否有通往目标的路由（`netdoctor trace` 找出是哪一跳）。

## tls_verify_failed

tls_verify_failed-summary = TLS 证书验证失败：{ $side ->
    [server] 服务端的证书已过期或尚未生效
   *[client] 客户端不信任服务端的证书
}
tls_verify_failed-explanation = TLS 握手在验证证书时被客户端中止，一个 HTTP 请求也没有发出。{ $side ->
    [server] 证书的有效期不包含现在的时间，需要服务端更换证书。
   *[client] 证书由客户端不认识的签发者签发（例如自签名证书或内部 CA），或者证书上的名字与 URL 不符。这是客户端的信任设置问题，不是服务端出错。
}
tls_verify_failed-fix = { $side ->
    [server] 在服务端续签或更换证书，然后重新诊断。
   *[client] 如果这是预期中的自签名证书或内部 CA，加上 `-k`（--insecure）跳过验证，或者把签发它的 CA 加入系统信任库；如果名字不符，使用证书上的名字访问。
}

## h2_flow_control_stall

h2_flow_control_stall-summary = HTTP/2 的 DATA 帧在等待{ common-who }的 WINDOW_UPDATE：{ common-impact }
h2_flow_control_stall-explanation = HTTP/2 流量控制只允许发送方在途的 DATA 不超过接收方给出的窗口（流窗口来自 SETTINGS_INITIAL_WINDOW_SIZE，默认 65535 字节；连接窗口在接收方调大之前也是 65535 字节）。发送方在消息发完之前就用完了窗口，只能等{ common-who }发回 WINDOW_UPDATE 才继续发送，所以每个窗口都多花一个往返时间。窗口小于路径的带宽时延积时，吞吐量约等于窗口除以往返时间。
h2_flow_control_stall-fix = 把{ common-who }的 HTTP/2 窗口调大到不小于带宽时延积：更大的 SETTINGS_INITIAL_WINDOW_SIZE，并尽早在流 0 上发送 WINDOW_UPDATE 扩大连接窗口（gRPC：启用基于 BDP 的动态窗口，或设置 InitialWindowSize/InitialConnWindowSize；nginx 接收请求体时：http2_body_preread_size），并在读取数据时就发送 WINDOW_UPDATE，而不是等窗口用完。

## h2_stream_limit

h2_stream_limit-summary = HTTP/2 请求在排队等待服务端的并发流上限：{ common-impact }
h2_stream_limit-explanation = 服务端限制了每个连接同时进行的流数量（SETTINGS_MAX_CONCURRENT_STREAMS）。达到上限后，客户端只能把后续请求留在本地排队，每结束一个流才开始一个新的：抓包中可以看到连接处于上限时，新流紧接着另一个流结束而开始。请求在客户端排队的时间不在网络上，但会计入客户端看到的延迟。
h2_stream_limit-fix = 如果服务端能同时处理更多请求，就调大 SETTINGS_MAX_CONCURRENT_STREAMS（nginx：http2_max_concurrent_streams，默认 128；gRPC：MaxConcurrentStreams）；或者让客户端使用连接池打开更多连接，而不是在一个连接上排队。

## h2_head_of_line

h2_head_of_line-summary = 队头阻塞：一次 TCP 丢包同时卡住了多个 HTTP/2 流（{ common-impact }）
h2_head_of_line-explanation = HTTP/2 在一个 TCP 连接上复用多个请求，而 TCP 只按顺序把数据交给应用。一个丢失的报文段会卡住所有数据排在它后面的流，直到重传到达，而不只是它所属的那个流：一次丢包会拖慢 N 个请求。
h2_head_of_line-fix = 先消除丢包（见 packet_loss_retransmission：路径、队列或限速器）。如果丢包无法避免，把请求分散到更多连接上，或者使用 HTTP/3（QUIC），它的各个流是独立交付的。

## h2_stream_resets

h2_stream_resets-summary = HTTP/2 流被重置（RST_STREAM/GOAWAY），主要由{ common-who }发出：{ common-impact }
h2_stream_resets-explanation = HTTP/2 端点用 RST_STREAM 结束单个流，用 GOAWAY 结束整个连接，两者都带错误码。REFUSED_STREAM 表示服务端没有处理这个请求（超过流上限或正在关闭，可以安全重试）；ENHANCE_YOUR_CALM 表示它认为客户端在滥用（过多的重置、PING 或 SETTINGS）；INTERNAL_ERROR 和 PROTOCOL_ERROR 表示某一方实现出错；客户端发出的 CANCEL 表示它不再需要这个请求；GOAWAY NO_ERROR 是正常关闭（连接轮换、重新加载）。
h2_stream_resets-fix = 查看发出带错误码帧的一方：REFUSED_STREAM 时让客户端的并发流不超过服务端的 SETTINGS_MAX_CONCURRENT_STREAMS 并重试被拒绝的请求；ENHANCE_YOUR_CALM 时找出客户端在大量发送什么（取消、PING、SETTINGS）；INTERNAL_ERROR 时查看服务端当时的日志；负载期间出现 GOAWAY 时调大服务端每个连接的请求数上限（nginx keepalive_requests），或让客户端提前重连。

## send_buffer_limited

send_buffer_limited-summary = 传输受发送缓冲区限制：发送方的套接字缓冲区（tcp_wmem 或 SO_SNDBUF）装不下足够的在途数据
send_buffer_limited-explanation = 拥塞窗口和接收方的窗口都还有余量，但发送方的在途数据只能达到发送缓冲区允许的量：程序写满了缓冲区后只能等确认释放空间，链路在等待中空闲。吞吐量约等于缓冲区大小除以往返时间。
send_buffer_limited-fix = 在发送方调大 net.ipv4.tcp_wmem 的最大值（或程序设置的 SO_SNDBUF），使其至少是带宽时延积的两倍；然后用 `netdoctor throughput` 复测。

## congestion_limited

congestion_limited-summary = 传输受拥塞或丢包限制：重传之后拥塞窗口一再缩小
congestion_limited-explanation = 路径上有丢包：发送方重传了一部分数据，每次丢包后拥塞窗口都会减小，在途数据被拥塞窗口卡住，而接收方的窗口和发送缓冲区都还有余量。往返时间没有明显增加，所以这不是限速器的排队，而是随机丢包或拥塞。
congestion_limited-fix = 找出丢包的位置（`netdoctor trace`、沿路各接口的错误和丢弃计数、防火墙规则），修复它；在无法避免丢包的路径上，使用对丢包不敏感的拥塞控制（bbr）。

## shaper_limited

shaper_limited-summary = 传输受限速器（整形或监管）限制：速率平直，数据在某个队列里排队或被丢弃
shaper_limited-explanation = 每个时间段的吞吐量几乎相同，往返时间比最小往返时间高出很多（数据在限速器的队列里排队），拥塞窗口而不是接收窗口卡住了在途数据；重传来自限速器队列满时的丢弃。这是路径上某处的整形器或监管器（tc htb/tbf、运营商或云平台的带宽上限）设定的速率。
shaper_limited-fix = 找到设置这个速率的地方（沿路的 `tc -s qdisc`、云平台的实例或链路带宽上限、运营商合同）并提高它，或者接受这个速率；调整 TCP 参数无法超过限速器的速率。

## mss_mtu_problem

mss_mtu_problem-summary = MSS/MTU 问题：大包在路径上丢失（路径 MTU 黑洞）或 MSS 过小
mss_mtu_problem-explanation = 连接的握手和小的控制报文都能通过同一条路径，但满尺寸的数据段一直得不到确认，发送方反复超时重传并退避：路径上某一跳的 MTU 比两端的小，而告知发送方的 ICMP“需要分片”消息被拦截了。或者协商出的 MSS 远小于链路能承载的大小，每个包的开销变大。
mss_mtu_problem-fix = 允许 ICMP“需要分片”（类型 3 代码 4）和 ICMPv6“包过大”通过防火墙；或者在路由器上把 MSS 钳制到路径 MTU（iptables TCPMSS --clamp-mss-to-pmtu），或在发送方启用 net.ipv4.tcp_mtu_probing=1；MSS 过小时检查两端的接口 MTU 和 MSS 钳制规则。

## receiver_softirq_saturated

receiver_softirq_saturated-summary = 接收方的一个 CPU 被占满，大量时间花在软中断（softirq）里且收包处理跟不上：收包的开销限制了传输
receiver_softirq_saturated-explanation = 传输期间，接收主机上处理收包的那个 CPU 没有空闲，很大一部分时间花在软中断里（NET_RX：协议栈、netfilter 规则、转发），软中断多次用完预算仍有积压（time_squeeze）；同一 CPU 上的繁忙任务会进一步挤占软中断（推迟到 ksoftirqd 后只能分到普通任务的份额）；接收程序本身并不忙，接收窗口和发送方也没有卡住数据。每个包的处理开销太大，或者所有收包都压在同一个 CPU 上。
receiver_softirq_saturated-fix = 把收包分散到多个 CPU（网卡多队列/RSS、RPS/RFS、调整中断亲和性，让繁忙任务避开这个 CPU），降低每个包的开销（减少或合并 netfilter 规则，改用 ipset/nft 集合，打开 GRO），然后用 `netdoctor throughput` 复测。

## spurious_retransmission

spurious_retransmission-summary = 不必要的重传：被补发的数据其实已经到达（接收方用 D-SACK 报告收到了两次，或者补发前已经确认），没有数据丢失
spurious_retransmission-explanation = { $side ->
    [network] 路径上的乱序让接收方发出了重复 ACK 或 SACK，发送方以为丢包而补发，原来的分段随后也到了。
   *[other] 发送方的重传定时器或尾部丢失探测（TLP，RFC 8985）比接收方的 ACK 先到期：是 ACK 来得慢（接收方延迟确认、往返时间变长），数据并没有丢。
} 这不是丢包：只多用了一点带宽，请求并没有因此变慢。
spurious_retransmission-fix = 通常无需处理。如果经常出现：{ $side ->
    [network] 找出乱序的来源（ECMP 多路径、链路聚合、网卡或驱动），Linux 的 RACK（net.ipv4.tcp_recovery）会根据 D-SACK 放宽乱序窗口。
   *[other] 检查接收方是否把 ACK 延迟得太久（例如 Windows 的 200 ms 延迟确认；TCP_QUICKACK），以及往返时间是否波动很大。
}

## dns_server_error

# $probe 是第一条证据的探测名：dns_servfail（SERVFAIL）、dns_refused（REFUSED）、dns_truncated（应答被截断且 TCP 不通）。
dns_server_error-summary = { $probe ->
    [dns_servfail] 域名服务器回答 SERVFAIL：它无法解析这个名字（不是名字不存在）
    [dns_refused] 域名服务器回答 REFUSED：它拒绝为本客户端解析
   *[other] 域名服务器的 UDP 应答被截断（TC 位），而通过 TCP 问它没有结果
}
dns_server_error-explanation = { $probe ->
    [dns_servfail] 域名服务器可达且立即应答，但它说自己解析失败：它连不上这个名字的权威服务器（上游或转发器宕机或被拦截）、DNSSEC 验证失败，或者区域配置有误（lame delegation）。这不是名字不存在，名字很可能是存在的。
    [dns_refused] 域名服务器按策略拒绝为本客户端解析这个名字：递归只对某些网络开放（allow-recursion/ACL），或者它只是权威服务器、不负责这个区域。
   *[other] 应答放不进一个 UDP 报文（TC 位），解析器必须改用 TCP 53 端口重问，而到这个服务器的 TCP 失败了。记录多、CNAME 链长或带 DNSSEC 的大应答就这样丢失，通常是防火墙只放行了 UDP 53。
}
dns_server_error-fix = { $probe ->
    [dns_servfail] 查看域名服务器的日志及其上游/转发器（它能否访问上游的 53 端口）；检查区域的委派和 DNSSEC（`dig +cd 名字` 能解析说明是验证失败，`dig +trace 名字`）；同时可在 resolv.conf 中改用正常的解析器。
    [dns_refused] 使用本网络应使用的解析器，或在域名服务器的递归 ACL 中放行本客户端的地址（BIND allow-recursion/allow-query，Unbound/dnsmasq 的 access-control）。
   *[other] 放行到域名服务器的 TCP 53 端口（防火墙、安全组）并确认它在 TCP 上监听；或者精简记录使应答能放进 UDP 报文（`options edns0`）。
}

## dns_dead_record

# $probe 是第一条证据的探测名：dead_record_silent（超时无应答）、dead_record_unreachable（立即失败，没有路由）、dead_record_refused（RST）。
dns_dead_record-summary = { $probe ->
    [dead_record_silent] 名字的记录中有一个失效地址：它在超时内不接受连接，而本次运行诊断的第一个地址是正常的
    [dead_record_unreachable] 名字的记录中有一个本机无法到达的地址：连接立即失败（没有路由，例如本机没有 IPv6 路由），而本次运行诊断的第一个地址是正常的
   *[other] 名字的记录中有一个没有服务监听的地址：连接被拒绝（RST），而本次运行诊断的第一个地址是正常的
}
dns_dead_record-explanation = 这个名字解析出多个地址，本机的解析器把一个正常的地址排在第一位，所以单看本次运行一切正常。但拿到其他顺序的客户端（其他解析器、轮询 DNS、先试 IPv6 的 happy eyeballs、轮换地址的客户端）会先尝试那个地址：{ $probe ->
    [dead_record_silent] 它们要等自己的连接超时（每个新连接都要等几秒）才改用下一个地址，不改用的客户端直接失败。表现为请求变慢，而本次运行诊断的地址看不出来。一次 connect() 无法区分主机宕机和防火墙丢弃该端口。
    [dead_record_unreachable] 本机上的客户端会立即失败（ENETUNREACH 或 ICMP 不可达）并马上改用下一个地址，不会等待；不改用的客户端直接失败。有路由的主机能否连上它，从本机无法判断。
   *[other] 它们会收到 RST 并立即改用下一个地址（每个新连接多一个往返）；不改用的客户端直接失败。
}
dns_dead_record-fix = { $probe ->
    [dead_record_unreachable] 如果这个名字必须通过该地址族访问，就给本机添加到该地址的路由（AAAA 记录需要 IPv6 默认路由）；如果该地址已不再提供服务，就从名字的记录中删除它（DNS 的 A/AAAA 记录或 /etc/hosts 中的那一行）。用 `getent ahosts 名字` 复查。
    [dead_record_refused] 在该地址上启动服务，或从名字的记录中删除该地址（DNS 的 A/AAAA 记录或 /etc/hosts 中的那一行）；用 `getent ahosts 名字` 复查。
   *[other] 从名字的记录中删除失效的地址（DNS 的 A/AAAA 记录或 /etc/hosts 中的那一行），或者让该主机恢复（并检查是否有防火墙丢弃该端口）；用 `getent ahosts 名字` 复查，并用 `netdoctor diagnose` 直接诊断该地址（URL 中写地址，加上 Host 头）。
}

## small_initial_window

small_initial_window-summary = 响应受制于过小的初始拥塞窗口：服务端第一轮只发出几个分段（Linux 默认 10 个），之后每轮都要等一个往返：{ common-impact }
small_initial_window-explanation = 服务端每个响应的第一轮（flight）只发了很少几个分段，然后等客户端的 ACK 过了一个往返才继续发送，后面各轮按慢启动逐轮增长、相隔一个往返。客户端的接收窗口是打开的，也没有丢包：限制响应的是服务端的初始拥塞窗口（路由上设了较小的 initcwnd，或者拥塞控制算法起步很低）。使用 Linux 默认的 10 个分段（RFC 6928）时，同样的数据可以少用几个往返发完；给出的时间就是多出的往返数 × 握手往返时间。
small_initial_window-fix = 在服务端把到客户端的路由恢复为默认的初始窗口：`ip route change <路由> initcwnd 10`（用 `ip route show` 查看路由上是否设置了 initcwnd；10 是内核默认值，更大的值要谨慎）。如果客户端一侧也限制了最初几轮，用同样的方法调大它的初始接收窗口（initrwnd）。

## slow_start_after_idle

slow_start_after_idle-summary = 长连接上空闲一段时间后的响应重新开始慢启动：服务端被之前响应撑大的拥塞窗口在空闲后退回到很小，每个响应多等几个往返：{ common-impact }
slow_start_after_idle-explanation = 在同一个保持的连接上，之前的响应已经把服务端的拥塞窗口撑大；空闲超过一个重传超时（RTO）之后，下一个响应又从很小的一轮开始发送，后面各轮按慢启动逐轮增长、相隔一个往返，每轮都由客户端的 ACK 放行。客户端的接收窗口是打开的，也没有丢包：是服务端内核在空闲后重新开始了慢启动（Linux 的 net.ipv4.tcp_slow_start_after_idle 默认开启，每空闲一个 RTO 把窗口减半，直到初始窗口）。给出的时间是：相对已撑大的窗口发送同样数据所需的往返，多出的往返数 × 握手往返时间（这是下限：窗口本可能继续增大）。
slow_start_after_idle-fix = 在发送数据的主机（服务端）上让窗口在空闲后保持：`sysctl -w net.ipv4.tcp_slow_start_after_idle=0`（写入 /etc/sysctl.d/ 持久化；它作用于该主机网络命名空间里的所有连接，长时间空闲后按旧窗口突发发送，在路径已变化时可能丢掉一部分）。带有自己控制回路的拥塞控制算法（BBR）不做这种重启。也可以让连接保持足够繁忙，或者为大响应使用新的、调优过的路径。
